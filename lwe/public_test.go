package lwe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"golang.org/x/crypto/chacha20"
)

// TestExpandColumn: column k of A is the little-endian words of ChaCha20
// (key = seed, nonce = "lweA" || k_be), checked against x/crypto directly;
// the held matrix equals the on-demand columns; seeds and columns differ.
func TestExpandColumn(t *testing.T) {
	seed := testSeed(1)
	for _, tc := range []struct{ k, in int }{{0, 5}, {1, 1024}, {4095, 3}, {1 << 40, 2}} {
		t.Run(fmt.Sprintf("col%d-in%d", tc.k, tc.in), func(t *testing.T) {
			var nonce [12]byte
			copy(nonce[:], "lweA")
			binary.BigEndian.PutUint64(nonce[4:], uint64(tc.k))
			c, err := chacha20.NewUnauthenticatedCipher(seed[:], nonce[:])
			if err != nil {
				t.Fatal(err)
			}
			ks := make([]byte, 4*tc.in)
			c.XORKeyStream(ks, ks)
			got := make([]uint32, tc.in)
			ExpandColumn(&seed, tc.k, got)
			for i := range got {
				if want := binary.LittleEndian.Uint32(ks[4*i:]); got[i] != want {
					t.Fatalf("A[%d, %d] = %#x, want %#x", i, tc.k, got[i], want)
				}
			}
		})
	}
	a, err := NewPublic(seed, 33, 9)
	if err != nil {
		t.Fatal(err)
	}
	col := make([]uint32, 33)
	for k := range 9 {
		ExpandColumn(&seed, k, col)
		if !slices.Equal(col, a.Col(k)) {
			t.Fatalf("held column %d differs from the on-demand one", k)
		}
	}
	if slices.Equal(a.Col(0), a.Col(1)) {
		t.Fatal("columns 0 and 1 equal")
	}
	other := testSeed(2)
	ExpandColumn(&other, 0, col)
	if slices.Equal(col, a.Col(0)) {
		t.Fatal("two seeds give one column")
	}
	if a.Bytes() != 33*9*4 {
		t.Fatalf("Bytes %d", a.Bytes())
	}
}

// naiveHint is H = W_q A mod 2^32 entry by entry in int64.
func naiveHint(w *Weights, a *Public) []uint32 {
	ht := make([]uint32, w.Out*a.Lambda)
	for k := range a.Lambda {
		for j := range w.Out {
			var acc int64
			for i, q := range w.Row(j) {
				acc += int64(q) * int64(a.Col(k)[i])
			}
			ht[k*w.Out+j] = uint32(acc)
		}
	}
	return ht
}

// TestComputeHint: the TEE's hint equals the entry-by-entry product for any
// worker count, and passes its own check.
func TestComputeHint(t *testing.T) {
	w := quantized(t, wMax, 7, 37, 3)
	a, _ := NewPublic(testSeed(4), 37, 23)
	want := naiveHint(w, a)
	defer func(n int) { hintChunkWords = n }(hintChunkWords)
	for i, workers := range []int{0, 1, 3, 100} {
		if i%2 == 1 {
			hintChunkWords = 1 // chunks of 8, 8 and 7 columns
		} else {
			hintChunkWords = 1 << 22
		}
		h, err := ComputeHint(w, a, workers)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(h.t.rows(), want) {
			t.Fatalf("workers %d: hint differs from the naive product", workers)
		}
		if err := VerifyHint(w, a, h, testStream(t, 1), 8); err != nil {
			t.Fatalf("workers %d: correct hint refused: %v", workers, err)
		}
	}
	if _, err := ComputeHint(quantized(t, wGauss, 2, 36, 1), a, 1); err == nil {
		t.Fatal("hint of a weight of width 36 over A of width 37 computed")
	}
}

// TestVerifyHintSoundness: one corrupted entry H + delta passes one
// repetition with probability 2^-(32 - t), t the 2-adic valuation of
// delta (1/2 for delta = 2^31, 2^-32 for odd delta), measured over many
// independent r; reps repetitions of the worst case pass as 2^-reps.
// Errors spread over several entries are caught too.
func TestVerifyHintSoundness(t *testing.T) {
	w := quantized(t, wGauss, 4, 12, 5)
	a, _ := NewPublic(testSeed(6), 12, 16)
	good, _ := ComputeHint(w, a, 1)
	const trials = 2000
	for _, tc := range []struct {
		name  string
		delta map[int]uint32 // index into H^T -> added error
		reps  int
		pass  float64 // probability that a wrong H passes
	}{
		{"odd", map[int]uint32{5: 1}, 1, 0},
		{"2^16", map[int]uint32{5: 1 << 16}, 1, 0},
		{"2^30", map[int]uint32{9: 3 << 30}, 1, 0.25},
		{"2^31", map[int]uint32{9: 1 << 31}, 1, 0.5},
		{"2^31 x3", map[int]uint32{9: 1 << 31}, 3, 0.125},
		{"2^31 x16", map[int]uint32{9: 1 << 31}, 16, 0},
		{"two 2^31 in one row", map[int]uint32{1: 1 << 31, 5: 1 << 31}, 1, 0.5},
		{"2^31 and 2^30 in one row", map[int]uint32{1: 1 << 31, 5: 1 << 30}, 1, 0.25},
		{"spread", map[int]uint32{0: 7, 20: 1 << 20, 63: 1 << 31}, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := good.t.rows()
			for i, d := range tc.delta {
				rows[i] += d
			}
			bad, err := NewHint(good.Out, good.Lambda, rows)
			if err != nil {
				t.Fatal(err)
			}
			rng := testStream(t, 9)
			passed := 0
			for range trials {
				err := VerifyHint(w, a, bad, rng, tc.reps)
				if err == nil {
					passed++
				} else if !errors.Is(err, ErrHint) {
					t.Fatal(err)
				}
			}
			mean := trials * tc.pass
			sd := math.Sqrt(trials * tc.pass * (1 - tc.pass))
			t.Logf("%d of %d passed (expected %.1f)", passed, trials, mean)
			if math.Abs(float64(passed)-mean) > 5*sd+0.5 {
				t.Fatalf("%d of %d wrong hints passed, expected %.1f +- %.1f", passed, trials, mean, 5*sd)
			}
		})
	}
}

// TestVerifyHints: several weights of one width checked with shared r: all
// correct pass; one wrong entry in any of them fails (odd error: caught at
// one repetition but for probability 2^-32).
func TestVerifyHints(t *testing.T) {
	a, _ := NewPublic(testSeed(6), 12, 16)
	var ws []*Weights
	var hs []*Hint
	for i, kind := range []weightKind{wGauss, wMax, wMixed} {
		w := quantized(t, kind, 3+i, 12, uint64(i))
		h, _ := ComputeHint(w, a, 1)
		ws, hs = append(ws, w), append(hs, h)
	}
	if err := VerifyHints(ws, a, hs, testStream(t, 2), 4); err != nil {
		t.Fatalf("correct hints refused: %v", err)
	}
	for i := range hs {
		hs[i].t.p[7]++
		if err := VerifyHints(ws, a, hs, testStream(t, 2), 1); !errors.Is(err, ErrHint) {
			t.Fatalf("hint %d wrong: %v", i, err)
		}
		hs[i].t.p[7]--
	}
	if err := VerifyHints(ws, a, hs[:2], testStream(t, 2), 1); err == nil {
		t.Fatal("3 weights with 2 hints accepted")
	}
}

// TestVerifyHintErrors: shapes, repetitions and an unkeyed stream.
func TestVerifyHintErrors(t *testing.T) {
	w := quantized(t, wGauss, 4, 12, 5)
	a, _ := NewPublic(testSeed(6), 12, 16)
	h, _ := ComputeHint(w, a, 1)
	if err := VerifyHint(w, a, &Hint{Out: 3, Lambda: 16, t: newTiles(3, 16)}, testStream(t, 1), 1); err == nil {
		t.Error("hint of 3 outputs checked against 4")
	}
	if err := VerifyHint(w, a, h, testStream(t, 1), 0); err == nil {
		t.Error("0 repetitions accepted")
	}
	s := testStream(t, 1)
	s.Wipe()
	if err := VerifyHint(w, a, h, s, 4); err == nil {
		t.Error("unkeyed stream accepted (r = 0 passes any H)")
	}
	if _, err := NewHint(4, 16, make([]uint32, 63)); err == nil {
		t.Error("63 words accepted as H^T [16, 4]")
	}
}

// TestParamsValidate lists what Params refuses.
func TestParamsValidate(t *testing.T) {
	for _, tc := range []struct {
		p  Params
		ok bool
	}{
		{Default, true}, {Params{1, 1, 1}, true}, {Params{0, 1, 16}, false}, {Params{8, 0, 16}, false},
		{Params{8, 9, 16}, false}, {Params{8, 2, 0}, false}, {Params{8, 2, 1<<16 + 1}, false},
	} {
		if err := tc.p.Validate(); (err == nil) != tc.ok {
			t.Errorf("%+v: %v", tc.p, err)
		}
	}
}
