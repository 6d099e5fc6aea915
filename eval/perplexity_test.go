package eval

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
)

// fakeModel computes logits as a function of (cache position, input
// token, vocabulary index), so a row scored at the wrong position, a
// window run without a reset, or a chunk continued at the wrong offset
// all change the result.
type fakeModel struct {
	vocab   int
	pos     int
	resets  int
	maxRows int
	buf     []float32
	logit   func(pos int, tok int32, v int) float32
}

func (f *fakeModel) Vocab() int { return f.vocab }
func (f *fakeModel) Reset()     { f.pos, f.resets = 0, f.resets+1 }

func (f *fakeModel) Prefill(toks []int32) ([]float32, error) {
	if n := len(toks) * f.vocab; cap(f.buf) < n {
		f.buf = make([]float32, n)
	}
	out := f.buf[:len(toks)*f.vocab]
	for i, t := range toks {
		for v := range f.vocab {
			out[i*f.vocab+v] = f.logit(f.pos+i, t, v)
		}
	}
	f.pos += len(toks)
	f.maxRows = max(f.maxRows, len(toks))
	return out, nil
}

func wavy(pos int, tok int32, v int) float32 {
	return float32(3 * math.Sin(0.1*float64(pos*7+int(tok)*3+v*13)))
}

func textOf(n, vocab int) []int32 {
	out := make([]int32, n)
	x := uint32(12345)
	for i := range out {
		x = x*1664525 + 1013904223
		out[i] = int32(x>>8) % int32(vocab)
	}
	return out
}

// reference scores tokens by the rule, written out independently: every
// window of ctx from an empty cache (positions from 0), rows ctx/2 ..
// ctx-2 predicting the next token, in float64; the standard error from
// the two-pass sample variance, sqrt(sum (x - mean)^2 / (n (n - 1))),
// which is what llama.cpp's one-pass formula equals.
func reference(tokens []int32, ctx, vocab int, logit func(int, int32, int) float32) (ppl, pplErr float64, n int) {
	var nlls []float64
	for w := 0; (w+1)*ctx <= len(tokens); w++ {
		win := tokens[w*ctx : (w+1)*ctx]
		for j := ctx / 2; j <= ctx-2; j++ {
			row := make([]float64, vocab)
			mx := math.Inf(-1)
			for v := range row {
				row[v] = float64(logit(j, win[j], v))
				mx = math.Max(mx, row[v])
			}
			var s float64
			for _, x := range row {
				s += math.Exp(x - mx)
			}
			nlls = append(nlls, mx+math.Log(s)-row[win[j+1]])
		}
	}
	var mean float64
	for _, x := range nlls {
		mean += x
	}
	mean /= float64(len(nlls))
	var ss float64
	for _, x := range nlls {
		ss += (x - mean) * (x - mean)
	}
	se := math.Sqrt(ss / float64(len(nlls)*(len(nlls)-1)))
	return math.Exp(mean), math.Exp(mean) * se, len(nlls)
}

// TestWindowRule: the windows, the scored half, the resets and the
// chunking by Batch follow the rule, for windows that chunk evenly, that
// do not, and a tail that is dropped.
func TestWindowRule(t *testing.T) {
	for _, tc := range []struct {
		name            string
		n, ctx, batch   int
		windows, perWin int
	}{
		{"one chunk a window", 64, 16, 16, 4, 7},
		{"even chunks", 64, 16, 4, 4, 7},
		{"uneven chunks", 70, 16, 5, 4, 7},
		{"row by row", 33, 16, 1, 2, 7},
		{"odd ctx", 50, 7, 3, 7, 3},
		{"smallest ctx", 10, 3, 2, 3, 1},
		{"batch past ctx", 40, 8, 100, 5, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const vocab = 37
			m := &fakeModel{vocab: vocab, logit: wavy}
			toks := textOf(tc.n, vocab)
			r, err := Run(m, toks, Options{Ctx: tc.ctx, Batch: tc.batch})
			if err != nil {
				t.Fatal(err)
			}
			ppl, se, n := reference(toks, tc.ctx, vocab, wavy)
			if r.Windows != tc.windows || r.Scored != int64(tc.windows*tc.perWin) || int(r.Scored) != n {
				t.Fatalf("windows %d scored %d, want %d and %d (reference %d)", r.Windows, r.Scored, tc.windows, tc.windows*tc.perWin, n)
			}
			if m.resets != tc.windows {
				t.Errorf("%d resets for %d windows", m.resets, tc.windows)
			}
			if m.maxRows > min(tc.batch, tc.ctx) {
				t.Errorf("a prefill of %d rows, batch %d", m.maxRows, tc.batch)
			}
			if e := math.Abs(r.PPL.Value-ppl) / ppl; e > 1e-12 {
				t.Errorf("PPL %.15g, reference %.15g", r.PPL.Value, ppl)
			}
			if e := math.Abs(r.PPL.Err-se) / se; e > 1e-6 {
				t.Errorf("PPL error %.15g, reference %.15g", r.PPL.Err, se)
			}
		})
	}
}

// TestUniformIsVocab: a model with flat logits has perplexity exactly the
// vocabulary size and no spread.
func TestUniformIsVocab(t *testing.T) {
	const vocab = 1000
	m := &fakeModel{vocab: vocab, logit: func(int, int32, int) float32 { return 0.5 }}
	r, err := Run(m, textOf(300, vocab), Options{Ctx: 32, Batch: 8})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(r.PPL.Value-vocab) > 1e-9 || r.PPL.Err != 0 {
		t.Fatalf("PPL %v +/- %v, want %d +/- 0", r.PPL.Value, r.PPL.Err, vocab)
	}
}

// TestRunErrors: bad windows and a model that returns only the last
// row's logits are clear errors.
func TestRunErrors(t *testing.T) {
	m := &fakeModel{vocab: 11, logit: wavy}
	lastOnly := lastRowModel{m}
	for _, tc := range []struct {
		name string
		m    Model
		toks []int32
		o    Options
		want string
	}{
		{"empty text", m, nil, Options{Ctx: 8}, "text shorter than one window: 0 tokens, a window is 8"},
		{"short text", m, textOf(7, 11), Options{Ctx: 8}, "7 tokens, a window is 8"},
		{"ctx too small", m, textOf(20, 11), Options{Ctx: 2}, "ctx 2: want at least 3"},
		{"negative batch", m, textOf(20, 11), Options{Ctx: 8, Batch: -1}, "batch -1"},
		{"last row only", lastOnly, textOf(20, 11), Options{Ctx: 8}, "returned 11 logits for 8 rows of 11 (a plan traced without AllLogits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(tc.m, tc.toks, tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := Run(m, nil, Options{Ctx: 8}); !errors.Is(err, ErrTooShort) {
		t.Errorf("empty text: %v is not ErrTooShort", err)
	}
}

type lastRowModel struct{ *fakeModel }

func (l lastRowModel) Prefill(toks []int32) ([]float32, error) {
	all, err := l.fakeModel.Prefill(toks)
	return all[len(all)-l.vocab:], err
}

// saveRun runs m over toks saving the log-probabilities; it returns the
// file's bytes.
func saveRun(t *testing.T, m Model, toks []int32, ctx int, dt DType) []byte {
	t.Helper()
	var buf bytes.Buffer
	nw, per := Windows(len(toks), ctx)
	lw, err := NewLogitsWriter(&buf, Header{DType: dt, Vocab: m.Vocab(), Ctx: ctx, Count: int64(nw * per)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(m, toks, Options{Ctx: ctx, Batch: 5, Save: lw}); err != nil {
		t.Fatal(err)
	}
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// compareRun runs m against a saved base.
func compareRun(m Model, toks []int32, ctx int, base []byte) (*Result, error) {
	lr, err := NewLogitsReader(bytes.NewReader(base), int64(len(base)))
	if err != nil {
		return nil, err
	}
	return Run(m, toks, Options{Ctx: ctx, Batch: 3, Base: lr})
}

// TestKLAgainstItself: a run against its own saved file, in either
// dtype, has KL exactly 0, top-1 agreement 100 % and the same perplexity.
func TestKLAgainstItself(t *testing.T) {
	for _, dt := range []DType{F32, F16} {
		t.Run(dt.String(), func(t *testing.T) {
			const vocab, ctx = 50, 12
			toks := textOf(100, vocab)
			base := saveRun(t, &fakeModel{vocab: vocab, logit: wavy}, toks, ctx, dt)
			r, err := compareRun(&fakeModel{vocab: vocab, logit: wavy}, toks, ctx, base)
			if err != nil {
				t.Fatal(err)
			}
			k := r.KL
			if k.KLD.Value != 0 || k.Max != 0 || k.Top1.Value != 1 || k.LogRatio.Value != 0 || k.RMSDeltaP != 0 {
				t.Fatalf("KLD %v max %v top-1 %v ln ratio %v rms dp %v: want 0, 0, 1, 0, 0", k.KLD, k.Max, k.Top1, k.LogRatio, k.RMSDeltaP)
			}
			if k.Count != r.Scored {
				t.Errorf("compared %d tokens of %d", k.Count, r.Scored)
			}
		})
	}
}

// TestKLAgainstAnother: a perturbed model has KL > 0, matching a float64
// reference of KL(base || run), and the statistics are consistent (the
// worst token's KL is the maximum, percentiles ordered and bounded by it).
func TestKLAgainstAnother(t *testing.T) {
	const vocab, ctx = 40, 10
	toks := textOf(200, vocab)
	other := func(p int, tok int32, v int) float32 {
		return wavy(p, tok, v) + float32(0.3*math.Cos(float64(v*5+p)))
	}
	base := saveRun(t, &fakeModel{vocab: vocab, logit: wavy}, toks, ctx, F32)
	r, err := compareRun(&fakeModel{vocab: vocab, logit: other}, toks, ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	k := r.KL
	// The reference: KL(P || Q) over every scored row, in float64.
	var sum, worst float64
	var n int
	var same int
	for w := 0; (w+1)*ctx <= len(toks); w++ {
		win := toks[w*ctx : (w+1)*ctx]
		for j := ctx / 2; j <= ctx-2; j++ {
			p, q := logSoftmax(vocab, func(v int) float64 { return float64(wavy(j, win[j], v)) }), logSoftmax(vocab, func(v int) float64 { return float64(other(j, win[j], v)) })
			var kl float64
			for v := range p {
				kl += math.Exp(p[v]) * (p[v] - q[v])
			}
			sum += kl
			worst = math.Max(worst, kl)
			n++
			if argmax(p) == argmax(q) {
				same++
			}
		}
	}
	if e := math.Abs(k.KLD.Value-sum/float64(n)) / (sum / float64(n)); e > 1e-5 {
		t.Errorf("mean KLD %.9g, reference %.9g", k.KLD.Value, sum/float64(n))
	}
	if math.Abs(k.Max-worst)/worst > 1e-5 || k.Worst.KL != k.Max {
		t.Errorf("max KLD %.9g (worst token's %.9g), reference %.9g", k.Max, k.Worst.KL, worst)
	}
	if want := float64(same) / float64(n); k.Top1.Value != want {
		t.Errorf("top-1 %v, reference %v", k.Top1.Value, want)
	}
	if !(k.KLD.Value > 0 && k.KLD.Err > 0 && k.Min <= k.KLD.Value && k.KLD.Value <= k.Max) {
		t.Errorf("KLD %v outside [min %v, max %v] or no spread", k.KLD, k.Min, k.Max)
	}
	prev := math.Inf(1)
	for _, p := range k.Percentiles {
		if p.KL > prev || p.KL > k.Max || p.KL < k.Min {
			t.Errorf("percentile %v: %v out of order or outside [%v, %v]", p.Q, p.KL, k.Min, k.Max)
		}
		prev = p.KL
	}
	if k.Worst.Pos < ctx/2+1 || k.Worst.Token != toks[k.Worst.Pos] {
		t.Errorf("worst token at %d (token %d): not a scored position of the text", k.Worst.Pos, k.Worst.Token)
	}
}

// TestKLRoundedBase: against an f16 base file, whose rounded
// log-probabilities no longer sum to exactly one, every token's KL is
// still >= 0 and the mean is the unrounded distributions' KL to within
// the rounding's second-order share; in f32 a perturbation far below the
// rounding is still read as a small positive KL. The plain sum
// p (b - q) read negative tokens in both cases and missed the f16 mean by
// several per cent.
func TestKLRoundedBase(t *testing.T) {
	const vocab, ctx = 40, 10
	toks := textOf(400, vocab)
	for _, tc := range []struct {
		name  string
		dt    DType
		scale float64 // of the run's perturbation
		tol   float64 // relative, of the mean against the float64 KL
	}{
		{"f16", F16, 0.05, 0.01},
		{"f32", F32, 1e-4, 0.05},
	} {
		t.Run(tc.name, func(t *testing.T) {
			other := func(p int, tok int32, v int) float32 {
				return wavy(p, tok, v) + float32(tc.scale*math.Cos(float64(v*5+p)))
			}
			base := saveRun(t, &fakeModel{vocab: vocab, logit: wavy}, toks, ctx, tc.dt)
			r, err := compareRun(&fakeModel{vocab: vocab, logit: other}, toks, ctx, base)
			if err != nil {
				t.Fatal(err)
			}
			var sum float64
			var n int
			for w := 0; (w+1)*ctx <= len(toks); w++ {
				win := toks[w*ctx : (w+1)*ctx]
				for j := ctx / 2; j <= ctx-2; j++ {
					p := logSoftmax(vocab, func(v int) float64 { return float64(wavy(j, win[j], v)) })
					q := logSoftmax(vocab, func(v int) float64 { return float64(other(j, win[j], v)) })
					for v := range p {
						sum += math.Exp(p[v]) * (p[v] - q[v])
					}
					n++
				}
			}
			ref, k := sum/float64(n), r.KL
			t.Logf("mean KLD %.6g (min %.3g), unrounded reference %.6g", k.KLD.Value, k.Min, ref)
			if k.Min < 0 {
				t.Errorf("minimum KLD %.3g: a divergence is never negative", k.Min)
			}
			if e := math.Abs(k.KLD.Value-ref) / ref; e > tc.tol {
				t.Errorf("mean KLD %.6g, unrounded reference %.6g: off by %.2g, want <= %g", k.KLD.Value, ref, e, tc.tol)
			}
		})
	}
}

func logSoftmax(n int, f func(int) float64) []float64 {
	out := make([]float64, n)
	mx := math.Inf(-1)
	for i := range out {
		out[i] = f(i)
		mx = math.Max(mx, out[i])
	}
	var s float64
	for _, x := range out {
		s += math.Exp(x - mx)
	}
	for i := range out {
		out[i] -= mx + math.Log(s)
	}
	return out
}

func argmax(x []float64) int {
	b := 0
	for i, v := range x {
		if v > x[b] {
			b = i
		}
	}
	return b
}

// TestBaseMismatch: a base file of another vocabulary, window, length or
// text is refused with an error that says which.
func TestBaseMismatch(t *testing.T) {
	const vocab, ctx = 30, 10
	toks := textOf(60, vocab)
	m := func() Model { return &fakeModel{vocab: vocab, logit: wavy} }
	base := saveRun(t, m(), toks, ctx, F32)
	otherText := append([]int32(nil), toks...)
	otherText[ctx-1] = (otherText[ctx-1] + 1) % vocab // the first window's last scored token
	for _, tc := range []struct {
		name string
		m    Model
		toks []int32
		ctx  int
		want string
	}{
		{"vocabulary", &fakeModel{vocab: vocab + 1, logit: wavy}, toks, ctx, "base logits have a vocabulary of 30, this model's is 31"},
		{"window", m(), toks, ctx + 2, "base logits were scored in windows of 10 tokens, this run's --ctx is 12"},
		{"length", m(), toks[:50], ctx, "base logits hold 24 scored tokens, this text and --ctx score 20"},
		{"text", m(), otherText, ctx, "base logits scored token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := compareRun(tc.m, tc.toks, tc.ctx, base)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
