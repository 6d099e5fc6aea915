package lwe

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// quantizeRow is the test's own x_q = roundHalfEven(x * (1 / step)).
func quantizeRow(x []float32, step float64) []int64 {
	q := make([]int64, len(x))
	if step == 0 {
		return q
	}
	inv := 1 / step
	for i, v := range x {
		q[i] = int64(math.RoundToEven(float64(v) * inv))
	}
	return q
}

// TestPipelineExact: decode(device(encode(x))) is W_q (Delta x_q + e)
// exactly, against an int64 reference, for every weight kind and every
// adversarial row; |v| stays below 2^31 (no wrap); the ciphertext is
// A s + e + Delta x_q; both device forms agree. For a row aligned with the
// largest-norm weight row the bound is within 1 % of tight, so the step is
// not needlessly coarse.
func TestPipelineExact(t *testing.T) {
	p := Params{Lambda: 48, H: 6, Delta: 16}
	shapes := []struct {
		kind    weightKind
		out, in int
	}{
		{wGauss, 12, 96}, {wMax, 8, 96}, {wOutlier, 6, 40}, {wMixed, 9, 64}, {wZero, 3, 17},
		{wMax, 2, 4096}, {wGauss, 3, 2560},
	}
	n := uint64(0)
	for _, sh := range shapes {
		w := quantized(t, sh.kind, sh.out, sh.in, uint64(sh.in))
		sc := newScheme(t, p, w)
		rng := rand.New(rand.NewPCG(3, uint64(sh.out)))
		for _, rk := range allRows {
			t.Run(fmt.Sprintf("%s-%dx%d/%s", sh.kind, sh.out, sh.in, rk), func(t *testing.T) {
				n++
				x := activation(rk, w, rng)
				pad := sc.gen.New()
				if err := sc.gen.Fill(n, pad); err != nil {
					t.Fatal(err)
				}
				c := make([]uint32, w.In)
				row, err := sc.enc.Encode(x, pad, c)
				if err != nil {
					t.Fatal(err)
				}
				s, e := sc.secret(t, n)
				xq := quantizeRow(x, row.Step)
				var q2 float64
				acols := columns(sc.a.Lambda, sc.a.Col)
				for i := range c {
					ref := int64(p.Delta) * xq[i]
					q2 += float64(xq[i] * xq[i])
					ref += e[i]
					for k, sk := range s {
						ref += sk * int64(acols[k][i])
					}
					if c[i] != uint32(ref) {
						t.Fatalf("c[%d] = %#x, A s + e + Delta x_q = %#x", i, c[i], uint32(ref))
					}
				}
				if math.Abs(row.XNorm-math.Sqrt(q2)) > 1e-9*row.XNorm {
					t.Fatalf("XNorm %v, |x_q|_2 = %v", row.XNorm, math.Sqrt(q2))
				}
				y, y2 := make([]uint32, w.Out), make([]uint32, w.Out)
				if err := MulRef(w, c, y); err != nil {
					t.Fatal(err)
				}
				if err := MulLimbs(w, c, y2); err != nil {
					t.Fatal(err)
				}
				v := make([]int32, w.Out)
				if err := DecodeInt(w, row, y, pad, 0, v); err != nil {
					t.Fatal(err)
				}
				var worst float64
				for j := range v {
					if y[j] != y2[j] {
						t.Fatalf("y[%d]: direct %#x, limbs %#x", j, y[j], y2[j])
					}
					var ref int64
					for i, q := range w.Row(j) {
						ref += int64(q) * (int64(p.Delta)*xq[i] + e[i])
					}
					if ref >= 1<<31 || ref < -(1<<31) {
						t.Fatalf("v[%d] = %d wraps", j, ref)
					}
					if int64(v[j]) != ref {
						t.Fatalf("v[%d] = %d, W_q (Delta x_q + e) = %d", j, v[j], ref)
					}
					worst = max(worst, math.Abs(float64(ref))/0x1p31)
				}
				t.Logf("step %.3g, |x_q|_2 %.4g, max |v| / 2^31 = %.4f", row.Step, row.XNorm, worst)
				if rk == xAligned && sh.kind != wZero && sh.kind != wOutlier && worst < 0.99 {
					t.Errorf("aligned row reaches only %.4f of 2^31: the step is coarser than the bound needs", worst)
				}
			})
		}
	}
}

// TestDecodeNoise measures the noise decode keeps, (w_j . e) / Delta in
// units of step s_w[j], against the package doc over every row kind
// (Gaussian and adversarial: the noise does not depend on x): mean 0,
// standard deviation |w_j|_2 / Delta, at most 2 |w_j|_1 / Delta; on
// Gaussian rows, sqrt(12) / Delta (0.22 at Delta 16) of the activation
// rounding's standard deviation. The float output equals the exact
// quantized product plus that noise, to float32 rounding; a zero row
// decodes to exact zeros.
func TestDecodeNoise(t *testing.T) {
	for _, tc := range []struct {
		kind    weightKind
		out, in int
		delta   uint32
	}{
		{wGauss, 48, 256, 16}, {wMax, 32, 192, 16}, {wGauss, 48, 256, 4},
	} {
		t.Run(fmt.Sprintf("%s-delta%d", tc.kind, tc.delta), func(t *testing.T) {
			p := Params{Lambda: 64, H: 8, Delta: tc.delta}
			w := quantized(t, tc.kind, tc.out, tc.in, 11)
			sc := newScheme(t, p, w)
			rng := rand.New(rand.NewPCG(5, 9))
			var sum, sum2, gauss2, round2, relF float64
			var cnt, gcnt int
			for n := range uint64(300) {
				kind := allRows[n%uint64(len(allRows))]
				x := activation(kind, w, rng)
				pad := sc.gen.New()
				_ = sc.gen.Fill(n, pad)
				c := make([]uint32, w.In)
				row, err := sc.enc.Encode(x, pad, c)
				if err != nil {
					t.Fatal(err)
				}
				y, v, out := make([]uint32, w.Out), make([]int32, w.Out), make([]float32, w.Out)
				_ = MulRef(w, c, y)
				if err := Decode(w, row, y, pad, 0, v, out); err != nil {
					t.Fatal(err)
				}
				xq := quantizeRow(x, row.Step)
				if kind == xZero {
					for j, o := range out {
						if o != 0 {
							t.Fatalf("zero row: out[%d] = %v, want 0 (step 0 drops the noise)", j, o)
						}
					}
					continue
				}
				for j := range v {
					var dot int64
					var rnd, exact float64
					for i, q := range w.Row(j) {
						dot += int64(q) * xq[i]
						rnd += float64(q) * (float64(xq[i]) - float64(x[i])/row.Step)
						exact += float64(q) * float64(x[i])
					}
					noise := float64(int64(v[j]) - int64(p.Delta)*dot) // = w_j . e exactly
					_, worst := NoiseBound(w, j, p.Delta)
					if math.Abs(noise)/float64(p.Delta) > worst {
						t.Fatalf("row %d out %d: noise %v past its bound %v", n, j, noise/float64(p.Delta), worst)
					}
					z := noise / w.Norm[j]
					sum += z
					sum2 += z * z
					cnt++
					if kind == xGauss { // rounding errors uniform: the doc's model
						gauss2 += z * z
						round2 += (rnd / w.Norm[j]) * (rnd / w.Norm[j])
						gcnt++
					}
					unit := row.Step * float64(w.Scale[j])
					want := unit * (float64(dot) + noise/float64(p.Delta))
					if d := math.Abs(float64(out[j]) - want); d > 2e-7*math.Abs(want)+0x1p-149 {
						t.Fatalf("out[%d] = %v, s_w step (w.x_q + w.e / Delta) = %v", j, out[j], want)
					}
					if kind != xTiny { // outputs near 1e-43 are float32 subnormals: 2^-149 quanta
						relF = max(relF, math.Abs(float64(out[j])-float64(w.Scale[j])*exact)/(unit*w.Norm[j]))
					}
				}
			}
			mean, rms := sum/float64(cnt), math.Sqrt(sum2/float64(cnt))
			ratio := math.Sqrt(gauss2/round2) / float64(p.Delta)
			wantRatio := math.Sqrt(12) / float64(p.Delta)
			t.Logf("noise / |w_j|_2: mean %.4f rms %.4f (want 0, 1); lattice / rounding rms %.4f (want %.4f); max |y - s_w W_q x| %.3f |w_j|_2 step s_w",
				mean, rms, ratio, wantRatio, relF)
			if math.Abs(mean) > 0.05 || math.Abs(rms-1) > 0.07 {
				t.Errorf("noise mean %.4f rms %.4f in units of |w_j|_2, want 0 and 1", mean, rms)
			}
			if math.Abs(ratio/wantRatio-1) > 0.1 {
				t.Errorf("lattice / rounding noise %.4f, want sqrt(12) / Delta = %.4f", ratio, wantRatio)
			}
		})
	}
}

// TestReusedPad: two rows under one pad (the same counter filled twice)
// give c1 - c2 = Delta (x1_q - x2_q) mod 2^32: the device reads the
// difference of the quantized rows exactly, and every difference word is
// a multiple of Delta. Under two pads the difference is masked: about
// 1 / Delta of its words are multiples of Delta. The harness's reused-pad
// attack is this subtraction.
func TestReusedPad(t *testing.T) {
	p := Params{Lambda: 64, H: 8, Delta: 16}
	w := quantized(t, wGauss, 16, 512, 1)
	sc := newScheme(t, p, w)
	rng := rand.New(rand.NewPCG(8, 8))
	x1, x2 := activation(xGauss, w, rng), activation(xGauss, w, rng)
	encode := func(x []float32, n uint64) ([]uint32, Row) {
		pad := sc.gen.New()
		if err := sc.gen.Fill(n, pad); err != nil {
			t.Fatal(err)
		}
		c := make([]uint32, w.In)
		row, err := sc.enc.Encode(x, pad, c)
		if err != nil {
			t.Fatal(err)
		}
		return c, row
	}
	c1, r1 := encode(x1, 42)
	c2, r2 := encode(x2, 42)
	c3, _ := encode(x2, 43)
	q1, q2 := quantizeRow(x1, r1.Step), quantizeRow(x2, r2.Step)
	multiples := 0
	for i := range c1 {
		d := int32(c1[i] - c2[i])
		if d%int32(p.Delta) != 0 || int64(d/int32(p.Delta)) != q1[i]-q2[i] {
			t.Fatalf("reused pad: (c1 - c2)[%d] / Delta = %v, x1_q - x2_q = %d", i, float64(d)/float64(p.Delta), q1[i]-q2[i])
		}
		if (c1[i]-c3[i])%p.Delta == 0 {
			multiples++
		}
	}
	if frac := float64(multiples) / float64(w.In); frac > 3.0/float64(p.Delta) {
		t.Errorf("fresh pads: %.3f of difference words are multiples of Delta, want about %.3f", frac, 1/float64(p.Delta))
	}
}

// TestDecodeRange: a device result off by a large amount leaves the row's
// bound and is refused; an honest one passes.
func TestDecodeRange(t *testing.T) {
	p := Params{Lambda: 32, H: 4, Delta: 16}
	w := quantized(t, wGauss, 8, 128, 2)
	sc := newScheme(t, p, w)
	x := activation(xGauss, w, rand.New(rand.NewPCG(1, 1)))
	for _, tc := range []struct {
		name string
		flip uint32
		want error
	}{
		{"honest", 0, nil}, {"bit31", 1 << 31, ErrRange}, {"minus 2^31 - 2^24", 1<<31 + 1<<24, ErrRange},
		// The limit: the bound is Cauchy-Schwarz's, near 2^31 for the
		// largest-norm row, so a shift by 2^29 passes unseen.
		{"2^29 passes", 1 << 29, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pad := sc.gen.New()
			_ = sc.gen.Fill(9, pad)
			c, y, v := make([]uint32, w.In), make([]uint32, w.Out), make([]int32, w.Out)
			row, err := sc.enc.Encode(x, pad, c)
			if err != nil {
				t.Fatal(err)
			}
			_ = MulRef(w, c, y)
			y[3] += tc.flip
			if err := DecodeInt(w, row, y, pad, 0, v); !errors.Is(err, tc.want) {
				t.Fatalf("decode: %v, want %v", err, tc.want)
			}
		})
	}
}

// TestPadSingleUse: encode and decode each consume their part of a pad,
// wipe it and refuse it a second time.
func TestPadSingleUse(t *testing.T) {
	p := Params{Lambda: 32, H: 4, Delta: 16}
	w := quantized(t, wGauss, 8, 64, 2)
	sc := newScheme(t, p, w)
	x := activation(xGauss, w, rand.New(rand.NewPCG(1, 2)))
	pad := sc.gen.New()
	_ = sc.gen.Fill(1, pad)
	c, y, v := make([]uint32, w.In), make([]uint32, w.Out), make([]int32, w.Out)
	row, err := sc.enc.Encode(x, pad, c)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range pad.M {
		if m != 0 {
			t.Fatalf("M[%d] = %#x after encode, want wiped", i, m)
		}
	}
	if _, err := sc.enc.Encode(x, pad, c); !errors.Is(err, ErrPadUsed) {
		t.Fatalf("second encode: %v, want ErrPadUsed", err)
	}
	_ = MulRef(w, c, y)
	if err := DecodeInt(w, row, y, pad, 0, v); err != nil {
		t.Fatal(err)
	}
	for j, u := range pad.U[0] {
		if u != 0 {
			t.Fatalf("U[%d] = %#x after decode, want wiped", j, u)
		}
	}
	if err := DecodeInt(w, row, y, pad, 0, v); !errors.Is(err, ErrPadUsed) {
		t.Fatalf("second decode: %v, want ErrPadUsed", err)
	}
	_ = sc.gen.Fill(2, pad)
	pad.Wipe()
	if _, err := sc.enc.Encode(x, pad, c); !errors.Is(err, ErrPadUsed) {
		t.Fatalf("encode after Wipe: %v, want ErrPadUsed", err)
	}
	// A pad not filled by a PadGen: its zero M would send Delta x_q in
	// the clear.
	handMade := &Pad{M: make([]uint32, w.In), U: [][]uint32{make([]uint32, w.Out)}}
	if _, err := sc.enc.Encode(x, handMade, c); !errors.Is(err, ErrPadUsed) {
		t.Fatalf("encode with a hand-made pad: %v, want ErrPadUsed", err)
	}
	if err := DecodeInt(w, row, y, handMade, 0, v); !errors.Is(err, ErrPadUsed) {
		t.Fatalf("decode with a hand-made pad: %v, want ErrPadUsed", err)
	}
	if err := sc.gen.Fill(3, handMade); err == nil {
		t.Fatal("Fill into a pad without New's shape succeeded")
	}
	if err := DecodeInt(w, row, y, nil, 0, v); err == nil {
		t.Fatal("decode with a nil pad succeeded")
	}
}

// TestSharedCiphertext: one ciphertext feeds two weights (q and k share
// one): the encoder's step keeps the larger-norm one from wrapping and each
// decodes exactly with its own u.
func TestSharedCiphertext(t *testing.T) {
	p := Params{Lambda: 32, H: 4, Delta: 16}
	small := quantized(t, wGauss, 6, 128, 3)
	big := quantized(t, wMax, 4, 128, 4)
	sc := newScheme(t, p, small, big)
	if sc.enc.MaxNorm != big.MaxNorm {
		t.Fatalf("encoder max norm %v, want the larger weight's %v", sc.enc.MaxNorm, big.MaxNorm)
	}
	x := make([]float32, 128)
	for i := range x {
		x[i] = float32(big.Q[i]) // aligned with big's row 0: the tight case
	}
	pad := sc.gen.New()
	_ = sc.gen.Fill(5, pad)
	c := make([]uint32, 128)
	row, err := sc.enc.Encode(x, pad, c)
	if err != nil {
		t.Fatal(err)
	}
	_, e := sc.secret(t, 5)
	xq := quantizeRow(x, row.Step)
	for h, w := range []*Weights{small, big} {
		y, v := make([]uint32, w.Out), make([]int32, w.Out)
		_ = MulRef(w, c, y)
		if err := DecodeInt(w, row, y, pad, h, v); err != nil {
			t.Fatalf("hint %d: %v", h, err)
		}
		for j := range v {
			var ref int64
			for i, q := range w.Row(j) {
				ref += int64(q) * (16*xq[i] + e[i])
			}
			if int64(v[j]) != ref {
				t.Fatalf("hint %d: v[%d] = %d, want %d", h, j, v[j], ref)
			}
		}
	}
}

// TestEffectiveBits: the row norm the encoder reaches on a row that fills
// the budget matches EffectiveBits, and the figures the package doc quotes
// hold (Gaussian weights, Delta 16).
func TestEffectiveBits(t *testing.T) {
	for _, tc := range []struct {
		in      int
		wantRow float64 // package doc's figure, to 0.1 bits
	}{
		{1024, 16.6}, {4096, 15.7},
	} {
		w := quantized(t, wGauss, 64, tc.in, 21)
		enc, err := NewEncoder(Default, w)
		if err != nil {
			t.Fatal(err)
		}
		row, rms := EffectiveBits(w.MaxNorm, tc.in, Default.Delta)
		x := activation(xGauss, w, rand.New(rand.NewPCG(2, 2)))
		pad := &Pad{M: make([]uint32, tc.in), mFresh: true}
		r, err := enc.Encode(x, pad, make([]uint32, tc.in))
		if err != nil {
			t.Fatal(err)
		}
		got := math.Log2(r.XNorm)
		t.Logf("d_in %d: max |w_j|_2 = %.0f (%.1f sqrt(d_in)): %.2f bits over the row (measured %.2f), %.2f at the rms",
			tc.in, w.MaxNorm, w.MaxNorm/math.Sqrt(float64(tc.in)), row, got, rms)
		if math.Abs(got-row) > 0.01 {
			t.Errorf("d_in %d: |x_q|_2 reaches %.3f bits, EffectiveBits says %.3f", tc.in, got, row)
		}
		if math.Abs(row-tc.wantRow) > 0.1 {
			t.Errorf("d_in %d: %.2f bits, the package doc says %.1f", tc.in, row, tc.wantRow)
		}
	}
	worst, _ := EffectiveBits(127*64, 4096, 16)
	if math.Abs(worst-14) > 0.05 {
		t.Errorf("all-127 at 4096: %.2f bits, the package doc says 14", worst)
	}
	// An outlier at 1000x the rms costs the other coordinates 4 bits.
	w := quantized(t, wGauss, 16, 4096, 21)
	enc, _ := NewEncoder(Default, w)
	x := activation(xGauss, w, rand.New(rand.NewPCG(4, 4)))
	var rms float64
	for _, v := range x {
		rms += float64(v) * float64(v)
	}
	rms = math.Sqrt(rms / float64(len(x)))
	bitsAtRMS := func(x []float32) float64 {
		r, err := enc.Encode(x, &Pad{M: make([]uint32, len(x)), mFresh: true}, make([]uint32, len(x)))
		if err != nil {
			t.Fatal(err)
		}
		return math.Log2(rms / r.Step)
	}
	plain := bitsAtRMS(x)
	x[7] = float32(1000 * rms)
	lost := plain - bitsAtRMS(x)
	t.Logf("outlier at 1000x rms, d_in 4096: %.2f -> %.2f bits at the rms", plain, plain-lost)
	if math.Abs(lost-4) > 0.1 {
		t.Errorf("an outlier at 1000x the rms costs %.2f bits, the package doc says 4", lost)
	}
}

// TestEncodeErrors: bad input is an error naming what was wrong, never a
// panic or a partial ciphertext.
func TestEncodeErrors(t *testing.T) {
	p := Params{Lambda: 16, H: 2, Delta: 16}
	w := quantized(t, wGauss, 4, 8, 1)
	enc, err := NewEncoder(p, w)
	if err != nil {
		t.Fatal(err)
	}
	good := func() *Pad { return &Pad{M: []uint32{1, 2, 3, 4, 5, 6, 7, 8}, mFresh: true} }
	for _, tc := range []struct {
		name string
		x    []float32
		pad  *Pad
		c    int
		want string
	}{
		{"nan", []float32{0, 1, float32(math.NaN()), 0, 0, 0, 0, 0}, good(), 8, "x[2] is NaN"},
		{"inf", []float32{float32(math.Inf(-1)), 1, 0, 0, 0, 0, 0, 0}, good(), 8, "x[0] is -Inf"},
		{"short row", make([]float32, 7), good(), 8, "row of 7"},
		{"short ciphertext", make([]float32, 8), good(), 7, "ciphertext of 7"},
		{"nil pad", make([]float32, 8), nil, 8, "width 8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := make([]uint32, tc.c)
			_, err := enc.Encode(tc.x, tc.pad, c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			}
			for _, v := range c {
				if v != 0 {
					t.Fatal("ciphertext written on error")
				}
			}
			if tc.pad != nil && tc.pad.M[0] != 1 {
				t.Fatal("pad consumed on error")
			}
		})
	}
	w2 := quantized(t, wGauss, 4, 9, 1)
	if _, err := NewEncoder(p, w, w2); err == nil {
		t.Error("encoder over widths 8 and 9 accepted")
	}
	if _, err := NewEncoder(Params{Lambda: 4, H: 5, Delta: 16}, w); err == nil {
		t.Error("h > lambda accepted")
	}
}

// TestCodeAsmVsGo: Encode and Decode give the same words, rows and errors
// with the AVX2 kernels (sumSquaresAVX2, encodeAVX2, decodeAVX2) as with
// the Go loops, at widths around their 4- and 8-word steps, for every row
// kind of the wrap tests, and for a decode whose range check fails.
func TestCodeAsmVsGo(t *testing.T) {
	if !useAsm {
		t.Skip("no AVX2 here: only the Go form runs")
	}
	defer func() { useAsm = true }()
	rng := rand.New(rand.NewPCG(11, 12))
	refused := 0
	for _, in := range []int{1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33, 1024, 4099} {
		out := in%37 + 5
		w := quantized(t, wMixed, out, in, uint64(in))
		enc, err := NewEncoder(Default, w)
		if err != nil {
			t.Fatal(err)
		}
		for kind, rk := range allRows {
			x := activation(rk, w, rng)
			m := make([]uint32, in)
			u := make([]uint32, out)
			for i := range m {
				m[i] = rng.Uint32()
			}
			for i := range u {
				u[i] = rng.Uint32()
			}
			type result struct {
				row  Row
				c    []uint32
				v    []int32
				y    []float32
				err  error
				derr error
			}
			var res [2]result
			for a, asm := range []bool{true, false} {
				useAsm = asm
				pad := &Pad{M: slices.Clone(m), U: [][]uint32{slices.Clone(u)}, mFresh: true, uFresh: []bool{true}}
				r := result{c: make([]uint32, in), v: make([]int32, out), y: make([]float32, out)}
				r.row, r.err = enc.Encode(x, pad, r.c)
				prod := make([]uint32, out)
				_ = MulRef(w, r.c, prod)
				if kind == 1 {
					prod[out/2] += 1 << 31 // a wrong product: the range check must fail alike
				}
				r.derr = Decode(w, r.row, prod, pad, 0, r.v, r.y)
				res[a] = r
			}
			name := fmt.Sprintf("in %d row %s", in, rk)
			g, a := res[1], res[0]
			if a.row != g.row || !errors.Is(a.err, g.err) || !slices.Equal(a.c, g.c) {
				t.Fatalf("%s: encode differs: asm %+v %v, go %+v %v", name, a.row, a.err, g.row, g.err)
			}
			if (a.derr == nil) != (g.derr == nil) || !slices.Equal(a.v, g.v) {
				t.Fatalf("%s: decode differs: asm err %v, go err %v", name, a.derr, g.derr)
			}
			if g.derr == nil && !slices.Equal(a.y, g.y) {
				t.Fatalf("%s: rescaled outputs differ", name)
			}
			if errors.Is(g.derr, ErrRange) {
				refused++
			}
		}
	}
	if refused == 0 {
		t.Fatal("no decode failed its range check: the failing path was not compared")
	}
}
