package attack

import (
	"math"
	"math/rand/v2"
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
	switch protect {
	case "whitened": // the exact level's protection
		rec.Header["gelo.flag.mask"], rec.Header["gelo.flag.security"] = "haar", "exact"
	case "whiten-hd3": // the whiten level's: the TEE's stack under HD3
		rec.Header["gelo.flag.mask"], rec.Header["gelo.flag.security"] = "hd3", "whiten"
	}
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
		if protect == "whiten-hd3" {
			n, d := H.Dims()
			X, err := whitenedStack(D, toks, pow2(n+d))
			if err != nil {
				t.Fatal(err)
			}
			s, _ := X.Dims()
			if U, err = rowspace.HD3Apply(rowspace.RandomSigns(s, rng), rowspace.RandomSigns(s, rng), rowspace.RandomSigns(s, rng), X); err != nil {
				t.Fatal(err)
			}
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
	for _, am := range [][2]string{{"span", "decode top-1"}, {"span", "prefill bag recall"}, {"nn", "token recall"}, {"ima", "top-1"},
		{"strip-shield", "decode top-1"}, {"strip-shield", "prefill bag recall"}} {
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
	// The structure attack applies to the whitened stack (X is a function
	// of H) and stays at chance under Haar; without a mask it is n/a.
	for _, am := range [][2]string{{"hd3-structure", "true H ranked first"}, {"hd3-unmask", "decode top-1"}, {"hd3-unmask", "prefill bag recall"}} {
		if f, ok := hidden.Get(am[0], am[1]); !ok || f.NA != "" {
			t.Errorf("whitened: %s %s not run (%+v)", am[0], am[1], f)
		}
		if f, ok := plain.Get(am[0], am[1]); !ok || f.NA != "no mask" {
			t.Errorf("plain: %s %s = %+v, want n/a (no mask)", am[0], am[1], f)
		}
	}
	md := Markdown([]*Report{plain, hidden}, gates, verdicts)
	if !strings.Contains(md, "| span | decode top-1 |") || !strings.Contains(md, "every attack at chance") {
		t.Errorf("markdown:\n%s", md)
	}
	if _, err := JSON([]*Report{plain, hidden}, gates, verdicts); err != nil {
		t.Fatal(err)
	}
}

// TestEvaluateWhitenHD3: the whiten level's protection (the TEE's
// whitened stack under HD3) falls to the HD3 structure attack: the true H
// fits, wrong hypotheses do not, and the mask fitted with no hypothesis
// reads every row (the must-succeed case; exact above is the must-fail).
func TestEvaluateWhitenHD3(t *testing.T) {
	const V, d = 512, 48
	D := rowspace.Gaussian(V, d, rowspace.NewRand(17))
	rng := rowspace.NewRand(18)
	var prompts [][]int32
	for range 3 {
		p := make([]int32, 8)
		for i := range p {
			p[i] = int32(rng.IntN(V))
		}
		prompts = append(prompts, p)
	}
	T, err := dict.New(D, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer T.Close()
	rep, err := Evaluate(T, synthetic(t, D, prompts, 2, "whiten-hd3", 3), Options{ICAPasses: 1, ICAComponents: 8, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, am := range [][3]string{{"hd3-structure", "true H ranked first", "1"}, {"hd3-unmask", "decode top-1", "1"},
		{"hd3-unmask", "prefill bag recall", "1"}} {
		f, ok := rep.Get(am[0], am[1])
		t.Logf("whiten-hd3: %s %s %.3f (chance %.3f) n=%d", am[0], am[1], f.Value, f.Chance, f.N)
		if !ok || f.Value < 1 {
			t.Errorf("%s %s = %v, want 100 %%", am[0], am[1], f.Value)
		}
	}
	if f, _ := rep.Get("hd3-structure", "fit residual, true H"); !(f.Value < 1e-5 && f.Chance > 0.5) {
		t.Errorf("true-H residual %.3g against a Haar mask's %.3f", f.Value, f.Chance)
	}
	if _, vs := Judge([]*Report{rep}); vs[0].Secure {
		t.Error("the whiten protection is judged secure")
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
	// The uniformity figures break below their false-alarm level.
	for _, a := range []string{"chi-square", PadReuseAttack} {
		low := &Report{Condition: "U", Figures: []Figure{{Attack: a, Metric: "uniformity", Value: 1e-5, Chance: 1e-3}}}
		ok := &Report{Condition: "V", Figures: []Figure{{Attack: a, Metric: "uniformity", Value: 0.2, Chance: 1e-3}}}
		if _, vs := Judge([]*Report{low, ok}); vs[0].Secure || !vs[1].Secure {
			t.Errorf("%s: %+v", a, vs)
		}
	}
	if p := BinomTail(1, 48, 0.001); math.Abs(p-(1-math.Pow(0.999, 48))) > 1e-12 {
		t.Errorf("BinomTail(1, 48, 0.001) = %v", p)
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

// TestBinomTail checks the significance rule's tail against small exact
// cases and its behaviour far out.
func TestBinomTail(t *testing.T) {
	for _, c := range []struct {
		k, n int
		p    float64
		want float64
	}{
		{0, 10, 0.5, 1},
		{10, 10, 0.5, math.Exp2(-10)},
		{9, 10, 0.5, 11 * math.Exp2(-10)},
		{1, 3, 0.1, 1 - 0.9*0.9*0.9},
		{1, 100000, 1e-9, 1 - math.Pow(1-1e-9, 100000)},
	} {
		if got := BinomTail(c.k, c.n, c.p); math.Abs(got-c.want) > 1e-9*math.Max(1, c.want) && math.Abs(got-c.want)/c.want > 1e-6 {
			t.Errorf("P(X >= %d), n %d, p %g = %v, want %v", c.k, c.n, c.p, got, c.want)
		}
	}
	if got := BinomTail(65536, 65536, 1.0/16); got > 1e-300 {
		t.Errorf("every word divisible by 16 by luck: %v", got)
	}
	if got := BinomTail(4100, 65536, 1.0/16); got < 0.3 {
		t.Errorf("4100 of 65536 at 1/16 (mean 4096): tail %v, want about 0.47", got)
	}
}

// TestRowDiffWords: the pad-reuse figure's input. Rows that share a pad
// (c = m + Delta x) differ by multiples of Delta, which the uniformity test
// flags; rows with fresh pads differ uniformly and pass. Rows going to
// another weight or width are never paired with them.
func TestRowDiffWords(t *testing.T) {
	const cols, rows, delta = 64, 40, 16
	rng := rand.New(rand.NewPCG(5, 6))
	crossing := func(weight string, reuse bool) device.Crossing {
		m := make([]uint32, cols)
		for i := range m {
			m[i] = rng.Uint32()
		}
		w := make([]uint32, rows*cols)
		for r := range rows {
			if !reuse {
				for i := range m {
					m[i] = rng.Uint32()
				}
			}
			for i := range cols {
				x := uint32(int32(rng.IntN(2001) - 1000))
				w[r*cols+i] = m[i] + delta*x
			}
		}
		return device.Crossing{Dir: device.ToDevice, Op: "linear", Weight: weight, Rows: rows, Cols: cols, Words: w}
	}
	for _, tc := range []struct {
		reuse  bool
		broken bool
	}{{false, false}, {true, true}} {
		rec := &record.Recording{}
		for range 4 {
			// Two weights interleaved: pairs form within each weight only.
			rec.Crossings = append(rec.Crossings, crossing("layers.0.qkv", tc.reuse), crossing("layers.0.o", false))
		}
		d := rowDiffWords(rec)
		if len(d) != 2*4*rows/2*cols {
			t.Fatalf("reuse %v: %d difference words, want %d", tc.reuse, len(d), 2*4*rows/2*cols)
		}
		f, err := UniformFigure("row differences", d)
		if err != nil {
			t.Fatal(err)
		}
		if broken := f.Value < f.Chance; broken != tc.broken {
			t.Errorf("reuse %v: adjusted p %.3g (chance %.3g): broken %v, want %v", tc.reuse, f.Value, f.Chance, broken, tc.broken)
		}
	}
}
