package lwebreak

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"gelo/attack"
	attacklwe "gelo/attack/lwe"
	"gelo/lwe"
)

// TestLevelTable prints the harness table at the default configuration
// (the level at d_in 1024, 64 rows a kind, 6 known rows a toy instance).
// It runs only when asked:
//
//	GELO_LWEBREAK_TABLE=1 go test ./attack/lwebreak -run TestLevelTable -v
func TestLevelTable(t *testing.T) {
	if os.Getenv("GELO_LWEBREAK_TABLE") == "" {
		t.Skip("set GELO_LWEBREAK_TABLE=1 to print the lwe harness table")
	}
	requireFplll(t)
	start := time.Now()
	reports, err := Evaluate(context.Background(), Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	gates, verdicts := Judge(reports)
	t.Logf("%v\n%s", time.Since(start).Round(time.Second), attack.Markdown(reports, gates, verdicts))
	for _, r := range reports {
		for _, f := range r.Figures {
			if f.Note != "" {
				t.Logf("%s %s %s: %s", r.Condition, f.Attack, f.Metric, f.Note)
			}
		}
	}
}

// TestPrimalReach measures how far the primal attack goes on this machine:
// lambda from 40 up, h = lambda / 8, d_in = 2 lambda, LLL then BKZ-20,
// three known-plaintext rows each, until one reduction passes the time
// limit. It prints the rank, the time and the rows recovered beside the
// estimator's uSVP block size for the same instance. Only when asked:
//
//	GELO_LWEBREAK_REACH=1 go test ./attack/lwebreak -run TestPrimalReach -v -timeout 30m
func TestPrimalReach(t *testing.T) {
	if os.Getenv("GELO_LWEBREAK_REACH") == "" {
		t.Skip("set GELO_LWEBREAK_REACH=1 to measure the primal attack's reach")
	}
	requireFplll(t)
	const limit = 3 * time.Minute
	for _, block := range []int{0, 20} {
		for lambda := 40; ; lambda += 40 {
			h, in := lambda/8, 2*lambda
			st := newTestSetup(t, lwe.Params{Lambda: lambda, H: h, Delta: 16}, in)
			est, err := attacklwe.Estimate(attacklwe.Level(lambda, in, h), attacklwe.MATZOV{})
			if err != nil {
				t.Fatal(err)
			}
			var usvp attacklwe.Attack
			for _, a := range est.Attacks {
				if a.Name == "usvp" {
					usvp = a
				}
			}
			rng := rand.New(rand.NewPCG(uint64(lambda), 1))
			hits, rank, rows, slow := 0, 0, 0, false
			var spent time.Duration
			for range 3 {
				rows++
				x := Activation(RowGauss, in, rng)
				ct, err := st.Encrypt(x)
				if err != nil {
					t.Fatal(err)
				}
				b, err := KnownPlaintext(st.Enc, ct.C, x)
				if err != nil {
					t.Fatal(err)
				}
				r, err := Primal(context.Background(), st.A, b, h, PrimalOptions{Block: block, Timeout: limit})
				spent += r.Elapsed
				rank = r.Dim
				if err != nil && !errors.Is(err, errNotFound) {
					t.Logf("lambda %d block %d: %v", lambda, block, err)
					slow = true
					break
				}
				truth, _, _ := st.Secret(ct.Counter)
				if slices.Equal(r.S, truth) {
					hits++
				}
			}
			t.Logf("block %2d lambda %4d h %3d d_in %4d: rank %4d, %d/%d recovered, %v a row; estimate usvp beta %d (%.1f bits), min %.1f bits (%s)",
				block, lambda, h, in, rank, hits, rows, (spent / time.Duration(rows)).Round(time.Millisecond), usvp.Beta, usvp.Bits, est.Min().Bits, est.Min().Name)
			if slow || hits == 0 || spent/time.Duration(rows) > limit/4 {
				break
			}
		}
	}
}
