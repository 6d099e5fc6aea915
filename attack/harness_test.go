package attack

import (
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"gelo/attack/dict"
	"gelo/attack/rowspace"
	"gelo/device"
	"gelo/device/record"
)

func TestDictionaryIsTheLayer0Row(t *testing.T) {
	embed := []float32{3, 4, 0, 0, 1, 1}
	gamma := []float32{2, 0.5}
	D, err := Dictionary(embed, gamma, 3, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Row 0: (3, 4) / rms = (3, 4) / sqrt(12.5), times gamma.
	r := math.Sqrt(12.5)
	if got := D.RawRowView(0); math.Abs(got[0]-6/r) > 1e-12 || math.Abs(got[1]-2/r) > 1e-12 {
		t.Fatalf("row 0 = %v", got)
	}
	if _, err := Dictionary(embed, gamma, 4, 2, 0); err == nil {
		t.Fatal("a short embedding was accepted")
	}
}

// synthetic builds a recording of prompts under a protection: plain (the
// payload is the plaintext rows), or the exact-hiding reference (a
// whitened full-span shield under a fresh Haar mixing per pass), from a
// Gaussian dictionary.
func synthetic(t *testing.T, D *mat.Dense, prompts [][]int32, decode int, protect string, seed uint64) Run {
	t.Helper()
	rng := rowspace.NewRand(seed)
	rec := &record.Recording{Header: map[string]string{}}
	var truth []record.PassTruth
	pass := 0
	emit := func(p int, phase string, toks []int32) {
		H := rowsOf(D, toks)
		U := H
		if protect == "whitened" {
			X, err := rowspace.WhitenedStack(H)
			if err != nil {
				t.Fatal(err)
			}
			s, _ := X.Dims()
			U = rowspace.Mix(rowspace.Haar(s, rng), X)
		}
		r, c := U.Dims()
		data := make([]float32, 0, r*c)
		for i := range r {
			for _, x := range U.RawRowView(i) {
				data = append(data, float32(x))
			}
		}
		rec.Crossings = append(rec.Crossings, device.Crossing{Pass: pass, Phase: phase, Dir: device.ToDevice, Op: "matmul",
			Weight: "model.layers.0.self_attn.q_proj.weight", Rows: r, Cols: c, Data: data})
		truth = append(truth, record.PassTruth{Pass: pass, Prompt: p, Phase: phase, Tokens: toks})
		pass++
	}
	for p, prompt := range prompts {
		emit(p, "prefill", prompt)
		for j := range decode {
			emit(p, "decode", []int32{prompt[j%len(prompt)]})
		}
	}
	return Run{Condition: protect, Label: protect, Rec: rec, Truth: truth}
}

// TestEvaluateSucceedsAndFails: on plaintext payloads every recovery
// attack succeeds; on the exact-hiding reference every one is at chance
// and the verdict is secure. This is the harness's own must-succeed and
// must-fail pair, end to end.
func TestEvaluateSucceedsAndFails(t *testing.T) {
	const V, d = 1024, 48
	// Gaussian rows sharing a common direction, as embedding tables do
	// (on near-orthogonal rows the row Gram is near diagonal under any
	// mixing, and gram_error cannot tell a hidden payload from a plain one).
	D := rowspace.Gaussian(V, d, rowspace.NewRand(7))
	common := rowspace.Gaussian(1, d, rowspace.NewRand(8)).RawRowView(0)
	for v := range V {
		row := D.RawRowView(v)
		for j := range row {
			row[j] += 1.5 * common[j]
		}
	}
	rng := rowspace.NewRand(9)
	var prompts [][]int32
	for range 12 {
		p := make([]int32, 10)
		for i := range p {
			p[i] = int32(rng.IntN(V))
		}
		prompts = append(prompts, p)
	}
	opt := Options{ICAPasses: 3, ICAComponents: 16, Seed: 1}
	T, err := dict.New(D, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer T.Close()
	plain, err := Evaluate(T, withCondition(synthetic(t, D, prompts, 4, "plain", 1), Control), opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, am := range [][2]string{{"span", "decode top-1"}, {"span", "prefill bag recall"}, {"nn", "token recall"}, {"ima", "top-1"}} {
		f, ok := plain.Get(am[0], am[1])
		if !ok || f.Value < 0.95 {
			t.Errorf("plain: %s %s = %v, want >= 95 %%", am[0], am[1], f.Value)
		}
	}
	hidden, err := Evaluate(T, synthetic(t, D, prompts, 4, "whitened", 2), opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range hidden.Figures {
		t.Logf("whitened: %-12s %-20s %.4f (chance %.4f) n=%d", f.Attack, f.Metric, f.Value, f.Chance, f.N)
	}
	gates, verdicts := Judge([]*Report{plain, hidden})
	for _, g := range gates {
		if !g.Pass {
			t.Errorf("control gate %s fails on plaintext payloads: %v", g.Name, g.Measured)
		}
	}
	if len(verdicts) != 1 || !verdicts[0].Secure {
		t.Errorf("the exact-hiding reference is judged insecure: %+v", verdicts)
	}
	md := Markdown([]*Report{plain, hidden}, gates, verdicts)
	if !strings.Contains(md, "| span | decode top-1 |") || !strings.Contains(md, "every attack at chance") {
		t.Errorf("markdown:\n%s", md)
	}
	if _, err := JSON([]*Report{plain, hidden}, gates, verdicts); err != nil {
		t.Fatal(err)
	}
}

func withCondition(r Run, c string) Run { r.Condition = c; return r }

func TestJudge(t *testing.T) {
	broken := &Report{Condition: "X", Figures: []Figure{{Attack: "span", Metric: "decode top-1", Value: 1, Chance: 0.001},
		{Attack: "gram-error", Metric: "distance", Value: 0.2, Chance: math.NaN()}}}
	fine := &Report{Condition: "Y", Figures: []Figure{{Attack: "span", Metric: "decode top-1", Value: 0.015, Chance: 0.001},
		{Attack: "fastica", Metric: "p95 |cos|", Value: 0.3, Chance: 0.28}}}
	control := &Report{Condition: Control, Figures: []Figure{{Attack: "nn", Metric: "token recall", Value: 0.9}}}
	gates, vs := Judge([]*Report{control, broken, fine})
	if len(gates) != 3 || gates[0].Pass || gates[1].Pass {
		t.Errorf("control gates %+v: nn 90 %% and a missing ima must fail", gates)
	}
	if vs[0].Secure || len(vs[0].Broken) != 2 || !vs[1].Secure {
		t.Errorf("verdicts %+v", vs)
	}
	// One lucky hit in 20 trials at chance 0.1 % is 5 %, above chance + 2
	// points, but not significant; 5 hits are.
	lucky := &Report{Condition: "Z", Figures: []Figure{{Attack: "span", Metric: "decode top-1", Value: 1.0 / 20, Chance: 0.001, N: 20}}}
	many := &Report{Condition: "W", Figures: []Figure{{Attack: "span", Metric: "decode top-1", Value: 5.0 / 20, Chance: 0.001, N: 20}}}
	if _, vs := Judge([]*Report{lucky, many}); !vs[0].Secure || vs[1].Secure {
		t.Errorf("significance: %+v", vs)
	}
	if p := binomTail(1, 48, 0.001); math.Abs(p-(1-math.Pow(0.999, 48))) > 1e-12 {
		t.Errorf("binomTail(1, 48, 0.001) = %v", p)
	}
}

func TestKnownPlaintext(t *testing.T) {
	a, b := KnownPlaintext(3, 5, 100), KnownPlaintext(3, 5, 100)
	if len(a) != 3 || len(a[0]) != 5 {
		t.Fatalf("shape %d x %d", len(a), len(a[0]))
	}
	for i := range a {
		for j := range a[i] {
			if a[i][j] != b[i][j] || a[i][j] < 0 || a[i][j] >= 100 {
				t.Fatalf("not deterministic or out of range: %v vs %v", a, b)
			}
		}
	}
}
