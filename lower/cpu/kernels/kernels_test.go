package kernels

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

func randSlice(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(rng.NormFloat64())
	}
	return s
}

// fma32 is an exact float32 fused multiply-add: round32(a*b + c).
func fma32(a, b, c float32) float32 {
	x := new(big.Float).SetPrec(400).SetFloat64(float64(a))
	x.Mul(x, new(big.Float).SetPrec(400).SetFloat64(float64(b)))
	x.Add(x, new(big.Float).SetPrec(400).SetFloat64(float64(c)))
	f, _ := x.Float32()
	return f
}

// canonDot is the documented reduction order, evaluated with exact FMA.
func canonDot(x, w []float32) float32 {
	k := len(x)
	c := k / 8 * 8
	var a [8]float32
	for l := 0; c+l < k; l++ {
		a[l] = x[c+l] * w[c+l]
	}
	for i := 0; i < c; i += 8 {
		for l := 0; l < 8; l++ {
			a[l] = fma32(x[i+l], w[i+l], a[l])
		}
	}
	return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]))
}

func refMatMulT(x, w []float32, m, k, n int, bias []float32) (y, mag []float64) {
	y = make([]float64, m*n)
	mag = make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s, a float64
			for l := 0; l < k; l++ {
				p := float64(x[i*k+l]) * float64(w[j*k+l])
				s += p
				a += math.Abs(p)
			}
			if bias != nil {
				s += float64(bias[j])
				a += math.Abs(float64(bias[j]))
			}
			y[i*n+j], mag[i*n+j] = s, a
		}
	}
	return y, mag
}

func withCtx(t testing.TB, workers int) *Ctx {
	c := NewCtx(workers)
	t.Cleanup(c.Close)
	return c
}

func TestCanonicalOrderExact(t *testing.T) {
	if !useAsm {
		t.Skip("no FMA assembly on this machine/build: the fallback is not bit-exact by design")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	c := withCtx(t, 2)
	for _, k := range []int{1, 5, 8, 13, 64, 67} {
		// m from packMinRows on: a task packs its weight panel (AVX-512,
		// k%8 == 0); 2*packedRowBlock+7: several such row blocks. n = 19
		// and 27: a tail tile after an even and an odd number of full
		// ones.
		for _, mn := range [][2]int{{1, 19}, {2, 19}, {5, 19}, {7, 19}, {13, 19}, {packMinRows, 19}, {packMinRows, 27}, {2*packedRowBlock + 7, 19}, {2*packedRowBlock + 7, 27}} {
			m, n := mn[0], mn[1]
			x, w := randSlice(rng, m*k), randSlice(rng, n*k)
			bias := randSlice(rng, n)
			y := make([]float32, m*n)
			c.MatMulT(y, x, w, m, k, n, bias)
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					want := canonDot(x[i*k:(i+1)*k], w[j*k:(j+1)*k]) + bias[j]
					if got := y[i*n+j]; math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("k=%d m=%d y[%d][%d] = %v, canonical order gives %v", k, m, i, j, got, want)
					}
				}
			}
		}
	}
}

func TestMatMulTAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	c := withCtx(t, 3)
	for _, useA := range asmModes() {
		setMode(t, useA)
		for _, sz := range [][3]int{{1, 1, 1}, {1, 100, 37}, {3, 65, 19}, {4, 64, 3}, {9, 257, 31}, {70, 130, 301}, {5, 1024, 200}} {
			m, k, n := sz[0], sz[1], sz[2]
			x, w, bias := randSlice(rng, m*k), randSlice(rng, n*k), randSlice(rng, n)
			for _, b := range [][]float32{nil, bias} {
				y := make([]float32, m*n)
				c.MatMulT(y, x, w, m, k, n, b)
				ref, mag := refMatMulT(x, w, m, k, n, b)
				for i := range y {
					// |error| <= 2^-20 * sum |x_l w_l| (~ 8 ulp of the magnitude).
					if d := math.Abs(float64(y[i]) - ref[i]); d > mag[i]*0x1p-20 {
						t.Fatalf("asm=%v m=%d k=%d n=%d bias=%v: y[%d]=%v want %v (err %g, mag %g)", useA, m, k, n, b != nil, i, y[i], ref[i], d, mag[i])
					}
				}
			}
		}
	}
}

func TestMatMulTZeroK(t *testing.T) {
	c := withCtx(t, 2)
	y := []float32{9, 9, 9, 9}
	c.MatMulT(y, nil, nil, 2, 0, 2, []float32{1, 2})
	if y[0] != 1 || y[1] != 2 || y[2] != 1 || y[3] != 2 {
		t.Fatalf("k=0 with bias: %v", y)
	}
	c.MatMulT(y, nil, nil, 2, 0, 2, nil)
	for _, v := range y {
		if v != 0 {
			t.Fatalf("k=0: %v", y)
		}
	}
}

func bitsEqual(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// Row i of an m-row product must be bit-identical to the m=1 product of
// row i, for every m, tail case and worker count.
func TestMatMulTBitIdenticalAcrossM(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	ctxs := map[int]*Ctx{}
	for _, w := range []int{1, 2, 3, 7} {
		ctxs[w] = withCtx(t, w)
	}
	ks := []int{1, 3, 7, 8, 9, 15, 16, 17, 33, 100}
	ns := []int{1, 2, 3, 4, 5, 7, 8, 9, 10, 17, 31}
	ms := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 37}
	for _, useA := range asmModes() {
		setMode(t, useA)
		for _, k := range ks {
			for _, n := range ns {
				x, w, bias := randSlice(rng, 37*k), randSlice(rng, n*k), randSlice(rng, n)
				single := make([]float32, 37*n)
				for i := 0; i < 37; i++ {
					ctxs[1].MatMulT(single[i*n:(i+1)*n], x[i*k:(i+1)*k], w, 1, k, n, bias)
				}
				for _, m := range ms {
					for _, nw := range []int{1, 2, 3, 7} {
						y := make([]float32, m*n)
						ctxs[nw].MatMulT(y, x, w, m, k, n, bias)
						if i := bitsEqual(y, single[:m*n]); i >= 0 {
							t.Fatalf("asm=%v k=%d n=%d m=%d workers=%d: y[%d][%d]=%v, m=1 gives %v", useA, k, n, m, nw, i/n, i%n, y[i], single[i])
						}
					}
				}
			}
		}
	}
}

// Large shapes with several tasks in both dimensions and remainders.
func TestMatMulTBitIdenticalLarge(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	k, n := 1031, 96*2+5    // two panels + remainder (merged into the last)
	m := 2*gemmRowBlock + 7 // two row blocks + remainder
	x, w, bias := randSlice(rng, m*k), randSlice(rng, n*k), randSlice(rng, n)
	var ref []float32
	for _, nw := range []int{1, 2, 3, 7} {
		c := withCtx(t, nw)
		y := make([]float32, m*n)
		c.MatMulT(y, x, w, m, k, n, bias)
		if ref == nil {
			ref = y
		}
		if i := bitsEqual(y, ref); i >= 0 {
			t.Fatalf("workers=%d: y[%d]=%v, workers=1 gives %v", nw, i, y[i], ref[i])
		}
		// One row: a decode split of nw tasks over 24 tiles and 5 rows.
		single := make([]float32, n)
		for _, i := range []int{0, 5, 59, 60, 61, 119, m - 2, m - 1} {
			c.MatMulT(single, x[i*k:(i+1)*k], w, 1, k, n, bias)
			if j := bitsEqual(single, ref[i*n:(i+1)*n]); j >= 0 {
				t.Fatalf("workers=%d row %d col %d: m=1 gives %v, m=%d gives %v", nw, i, j, single[j], m, ref[i*n+j])
			}
		}
	}
}

func TestFallbackCloseToAsm(t *testing.T) {
	if !useAsm {
		t.Skip("no assembly kernels")
	}
	rng := rand.New(rand.NewPCG(9, 10))
	c := withCtx(t, 2)
	m, k, n := 6, 301, 29
	x, w := randSlice(rng, m*k), randSlice(rng, n*k)
	ya, yg := make([]float32, m*n), make([]float32, m*n)
	c.MatMulT(ya, x, w, m, k, n, nil)
	setAsm(t, false)
	c.MatMulT(yg, x, w, m, k, n, nil)
	_, mag := refMatMulT(x, w, m, k, n, nil)
	for i := range ya {
		if d := math.Abs(float64(ya[i] - yg[i])); d > mag[i]*0x1p-21 {
			t.Fatalf("y[%d]: asm %v fallback %v", i, ya[i], yg[i])
		}
	}
}

func TestMatMulTBadShapesPanic(t *testing.T) {
	c := withCtx(t, 1)
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "MatMulT") {
			t.Fatalf("want a MatMulT panic, got %v", r)
		}
	}()
	c.MatMulT(make([]float32, 4), make([]float32, 3), make([]float32, 4), 2, 2, 2, nil)
}

func TestExpf(t *testing.T) {
	worst := 0.0
	for x := -87.0; x < 88.7; x += 0.0137 {
		f := float32(x)
		got, want := float64(expf(f)), math.Exp(float64(f))
		if r := math.Abs(got-want) / want; r > worst {
			worst = r
		}
	}
	if worst > 3*0x1p-24 {
		t.Fatalf("expf worst relative error %g", worst)
	}
	if !math.IsInf(float64(expf(89)), 1) || expf(-104) != 0 || expf(0) != 1 || !math.IsNaN(float64(expf(float32(math.NaN())))) {
		t.Fatalf("expf specials: %v %v %v", expf(89), expf(-104), expf(0))
	}
}

func TestElementwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	c := withCtx(t, 3)
	for _, n := range []int{1, 100, 3*ewChunk + 5} {
		a, b := randSlice(rng, n), randSlice(rng, n)
		for i := range a {
			a[i] *= 4
		}
		y := make([]float32, n)
		check := func(name string, f func(a, b float64) float64, tol float64) {
			for i := range y {
				want := f(float64(a[i]), float64(b[i]))
				if d := math.Abs(float64(y[i]) - want); d > tol*(math.Abs(want)+1e-30) {
					t.Fatalf("%s n=%d [%d]: %v want %v", name, n, i, y[i], want)
				}
			}
		}
		sil := func(a float64) float64 { return a / (1 + math.Exp(-a)) }
		c.SiLU(y, a)
		check("SiLU", func(a, _ float64) float64 { return sil(a) }, 1e-6)
		c.SwiGLU(y, a, b)
		check("SwiGLU", func(a, b float64) float64 { return sil(a) * b }, 1e-6)
		c.Mul(y, a, b)
		check("Mul", func(a, b float64) float64 { return a * b }, 1e-7)
		c.Add(y, a, b)
		check("Add", func(a, b float64) float64 { return a + b }, 1e-7)
		// aliasing: y = a
		a2 := append([]float32(nil), a...)
		c.Add(a2, a2, b)
		if i := bitsEqual(a2, y); i >= 0 {
			t.Fatalf("aliased Add differs at %d", i)
		}
	}
}

func TestRMSNorm(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	c := withCtx(t, 3)
	for _, sz := range [][2]int{{1, 1024}, {3, 7}, {300, 1024}} {
		rows, d := sz[0], sz[1]
		x, w := randSlice(rng, rows*d), randSlice(rng, d)
		y := make([]float32, rows*d)
		const eps = 1e-6
		c.RMSNorm(y, x, w, rows, d, eps)
		for r := 0; r < rows; r++ {
			var ss float64
			for _, v := range x[r*d : (r+1)*d] {
				ss += float64(v) * float64(v)
			}
			inv := 1 / math.Sqrt(ss/float64(d)+eps)
			for i := 0; i < d; i++ {
				want := float64(x[r*d+i]) * inv * float64(w[i])
				if diff := math.Abs(float64(y[r*d+i]) - want); diff > 3e-7*math.Abs(want)+1e-30 {
					t.Fatalf("rows=%d d=%d [%d][%d]=%v want %v", rows, d, r, i, y[r*d+i], want)
				}
			}
		}
		// in place
		x2 := append([]float32(nil), x...)
		c.RMSNorm(x2, x2, w, rows, d, eps)
		if i := bitsEqual(x2, y); i >= 0 {
			t.Fatalf("in-place RMSNorm differs at %d", i)
		}
	}
}

func TestHeadRMSNorm(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	c := withCtx(t, 2)
	rows, heads, hd := 5, 3, 16
	x, w := randSlice(rng, rows*heads*hd), randSlice(rng, hd)
	want := make([]float32, len(x))
	for i := 0; i < rows*heads; i++ {
		c.RMSNorm(want[i*hd:(i+1)*hd], x[i*hd:(i+1)*hd], w, 1, hd, 1e-6)
	}
	c.HeadRMSNorm(x, w, rows, heads, hd, 1e-6)
	if i := bitsEqual(x, want); i >= 0 {
		t.Fatalf("HeadRMSNorm differs from per-head RMSNorm at %d", i)
	}
}

func TestRoPE(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	const hd, theta, maxPos = 16, 1e6, 5000
	r := NewRope(hd, theta, maxPos)
	rows, heads := 4, 3
	pos := []int32{0, 1, 17, 4999}
	x := randSlice(rng, rows*heads*hd)
	orig := append([]float32(nil), x...)
	if err := r.Apply(x, rows, heads, hd, pos); err != nil {
		t.Fatal(err)
	}
	for row := 0; row < rows; row++ {
		for h := 0; h < heads; h++ {
			o := (row*heads + h) * hd
			for i := 0; i < hd/2; i++ {
				ang := float64(pos[row]) * math.Pow(theta, -2*float64(i)/hd)
				c, s := math.Cos(ang), math.Sin(ang)
				x1, x2 := float64(orig[o+i]), float64(orig[o+i+hd/2])
				w1, w2 := x1*c-x2*s, x2*c+x1*s
				tol := 1e-6 * (math.Abs(x1) + math.Abs(x2))
				if math.Abs(float64(x[o+i])-w1) > tol || math.Abs(float64(x[o+i+hd/2])-w2) > tol {
					t.Fatalf("row %d head %d i %d: got %v,%v want %v,%v", row, h, i, x[o+i], x[o+i+hd/2], w1, w2)
				}
			}
		}
	}
	// Parallel form is identical.
	c := withCtx(t, 3)
	big := 300
	bp := make([]int32, big)
	for i := range bp {
		bp[i] = int32(i * 7 % maxPos)
	}
	xa := randSlice(rng, big*heads*hd)
	xb := append([]float32(nil), xa...)
	if err := r.Apply(xa, big, heads, hd, bp); err != nil {
		t.Fatal(err)
	}
	if err := c.RoPE(r, xb, big, heads, hd, bp); err != nil {
		t.Fatal(err)
	}
	if i := bitsEqual(xa, xb); i >= 0 {
		t.Fatalf("Ctx.RoPE differs from Apply at %d", i)
	}
	// Out of range position: error, x untouched.
	keep := append([]float32(nil), xa...)
	err := r.Apply(xa, 2, heads, hd, []int32{3, maxPos})
	if err == nil || !strings.Contains(err.Error(), "position 5000 of row 1") {
		t.Fatalf("want position error, got %v", err)
	}
	if bitsEqual(xa, keep) >= 0 {
		t.Fatal("x modified on error")
	}
	if err := r.Apply(xa, 1, heads, hd, []int32{-1}); err == nil {
		t.Fatal("negative position accepted")
	}
}

// naiveAttention in float64, on head-major caches.
func naiveAttention(q, kc, vc []float32, rows, heads, kvHeads, hd, maxT int, seq, pos []int32, scale float64) []float64 {
	out := make([]float64, rows*heads*hd)
	for r := 0; r < rows; r++ {
		for h := 0; h < heads; h++ {
			g := h / (heads / kvHeads)
			T := int(pos[r]) + 1
			s := make([]float64, T)
			m := math.Inf(-1)
			for t := 0; t < T; t++ {
				o := KVOffset(int(seq[r]), g, t, kvHeads, hd, maxT)
				var d float64
				for i := 0; i < hd; i++ {
					d += float64(q[(r*heads+h)*hd+i]) * float64(kc[o+i])
				}
				s[t] = d * scale
				m = math.Max(m, s[t])
			}
			var sum float64
			for t := range s {
				s[t] = math.Exp(s[t] - m)
				sum += s[t]
			}
			for t := 0; t < T; t++ {
				o := KVOffset(int(seq[r]), g, t, kvHeads, hd, maxT)
				for i := 0; i < hd; i++ {
					out[(r*heads+h)*hd+i] += s[t] / sum * float64(vc[o+i])
				}
			}
		}
	}
	return out
}

func TestAttention(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	type cfg struct{ heads, kvHeads, hd int }
	for _, useA := range asmModes() {
		setMode(t, useA)
		for _, cf := range []cfg{{4, 4, 8}, {8, 2, 16}, {6, 2, 20}, {10, 2, 12}, {16, 8, 128}} {
			const S, maxT = 3, 70
			kvW := cf.kvHeads * cf.hd
			kc, vc := randSlice(rng, S*maxT*kvW), randSlice(rng, S*maxT*kvW)
			seq := []int32{0, 2, 1, 2, 0, 1, 2}
			pos := []int32{0, 69, 2, 7, 8, 33, 1}
			rows := len(seq)
			q := randSlice(rng, rows*cf.heads*cf.hd)
			scale := float32(1 / math.Sqrt(float64(cf.hd)))
			want := naiveAttention(q, kc, vc, rows, cf.heads, cf.kvHeads, cf.hd, maxT, seq, pos, float64(scale))
			var ref []float32
			for _, nw := range []int{1, 2, 7} {
				c := withCtx(t, nw)
				out := make([]float32, len(q))
				if err := c.Attention(out, q, KVOf(kc), KVOf(vc), rows, cf.heads, cf.kvHeads, cf.hd, maxT, seq, pos, scale); err != nil {
					t.Fatal(err)
				}
				for i := range out {
					if d := math.Abs(float64(out[i]) - want[i]); d > 2e-6*(1+math.Abs(want[i])) {
						t.Fatalf("asm=%v %+v workers=%d out[%d]=%v want %v", useA, cf, nw, i, out[i], want[i])
					}
				}
				if ref == nil {
					ref = out
				} else if i := bitsEqual(out, ref); i >= 0 {
					t.Fatalf("%+v workers=%d differs at %d", cf, nw, i)
				}
				// Each row alone (decode) is bit-identical to the batch.
				one := make([]float32, cf.heads*cf.hd)
				for r := 0; r < rows; r++ {
					if err := c.Attention(one, q[r*cf.heads*cf.hd:], KVOf(kc), KVOf(vc), 1, cf.heads, cf.kvHeads, cf.hd, maxT, seq[r:], pos[r:], scale); err != nil {
						t.Fatal(err)
					}
					if i := bitsEqual(one, ref[r*cf.heads*cf.hd:]); i >= 0 {
						t.Fatalf("%+v row %d alone differs at %d", cf, r, i)
					}
				}
			}
		}
	}
}

func TestAttentionErrors(t *testing.T) {
	c := withCtx(t, 2)
	kc := KVOf(make([]float32, 2*10*8))
	q, out := make([]float32, 16), make([]float32, 16)
	if err := c.Attention(out, q, kc, kc, 1, 2, 1, 8, 10, []int32{2}, []int32{0}, 1); err == nil || !strings.Contains(err.Error(), "sequence 2") {
		t.Fatalf("want sequence error, got %v", err)
	}
	if err := c.Attention(out, q, kc, kc, 1, 2, 1, 8, 10, []int32{1}, []int32{10}, 1); err == nil || !strings.Contains(err.Error(), "position 10") {
		t.Fatalf("want position error, got %v", err)
	}
	if err := c.Attention(out, q, kc, kc, 1, 3, 2, 8, 10, []int32{1}, []int32{1}, 1); err == nil {
		t.Fatal("heads not a multiple of kvHeads accepted")
	}
	h := KV16(make([]uint16, 2*10*8), KVF16)
	if err := c.Attention(out, q, kc, h, 1, 2, 1, 8, 10, []int32{1}, []int32{1}, 1); err == nil || !strings.Contains(err.Error(), "one format") {
		t.Fatalf("want format error, got %v", err)
	}
}

func TestKVAppendEmbed(t *testing.T) {
	c := withCtx(t, 1)
	// Two sequences, 2 KV heads of 3, capacity 4: head-major.
	cache := make([]float32, 2*2*4*3)
	x := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	if err := c.KVAppend(KVOf(cache), x, 2, 2, 3, 4, []int32{1, 0}, []int32{2, 3}); err != nil {
		t.Fatal(err)
	}
	if cache[((1*2+0)*4+2)*3] != 1 || cache[((1*2+1)*4+2)*3+2] != 6 || cache[((0*2+1)*4+3)*3+1] != 11 {
		t.Fatalf("cache %v", cache)
	}
	if err := c.KVAppend(KVOf(cache), x, 1, 2, 3, 4, []int32{0}, []int32{4}); err == nil || !strings.Contains(err.Error(), "position 4") {
		t.Fatalf("want position error, got %v", err)
	}
	table := []float32{0, 0, 1, 1, 2, 2}
	y := make([]float32, 4)
	if err := c.Embed(y, table, []int32{2, 1}, 2, 3); err != nil || y[0] != 2 || y[3] != 1 {
		t.Fatalf("embed %v %v", y, err)
	}
	if err := c.Embed(y, table, []int32{0, 3}, 2, 3); err == nil || !strings.Contains(err.Error(), "token id 3 at index 1") {
		t.Fatalf("want id error, got %v", err)
	}
}

func TestNoAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	c := withCtx(t, 3)
	k, n := 256, 300
	x, w, bias := randSlice(rng, 64*k), randSlice(rng, n*k), randSlice(rng, n)
	y := make([]float32, 64*n)
	const heads, kvHeads, hd, maxT = 8, 2, 64, 128
	kc, vc := randSlice(rng, 2*maxT*kvHeads*hd), randSlice(rng, 2*maxT*kvHeads*hd)
	k16, v16 := make([]uint16, len(kc)), make([]uint16, len(vc))
	q, out := randSlice(rng, 2*heads*hd), make([]float32, 2*heads*hd)
	seq, pos := []int32{0, 1}, []int32{100, 5}
	rope := NewRope(hd, 1e6, maxT)
	big := randSlice(rng, 3*ewChunk)
	cases := map[string]func(){
		"matvec":    func() { c.MatMulT(y, x, w, 1, k, n, bias) },
		"matmul2":   func() { c.MatMulT(y, x, w, 2, k, n, nil) },
		"gemm":      func() { c.MatMulT(y, x, w, 64, k, n, bias) },
		"attention": func() { _ = c.Attention(out, q, KVOf(kc), KVOf(vc), 2, heads, kvHeads, hd, maxT, seq, pos, 0.125) },
		"rmsnorm":   func() { c.RMSNorm(x, x, w[:k], 64, k, 1e-6) },
		"headnorm":  func() { c.HeadRMSNorm(q, w[:hd], 2, heads, hd, 1e-6) },
		"rope":      func() { _ = c.RoPE(rope, q, 2, heads, hd, pos) },
		"swiglu":    func() { c.SwiGLU(big, big, big) },
		"kvappend":  func() { _ = c.KVAppend(KVOf(kc), q, 2, kvHeads, hd, maxT, seq, pos) },
		"attention16": func() {
			_ = c.Attention(out, q, KV16(k16, KVF16), KV16(v16, KVF16), 2, heads, kvHeads, hd, maxT, seq, pos, 0.125)
		},
		"kvappend16": func() { _ = c.KVAppend(KV16(k16, KVBF16), q, 2, kvHeads, hd, maxT, seq, pos) },
		"embed":      func() { _ = c.Embed(out[:2*k], w, []int32{3, 1}, k, n) },
		"silu":       func() { c.SiLU(big, big) },
		"add":        func() { c.Add(big, big, big) },
		"mul":        func() { c.Mul(y, y, y) },
	}
	for name, f := range cases {
		f()
		if a := testing.AllocsPerRun(20, f); a != 0 {
			t.Errorf("%s: %v allocations per run", name, a)
		}
	}
	// A different batch size after warm-up must not allocate either.
	if a := testing.AllocsPerRun(5, func() {
		_ = c.Attention(out, q, KVOf(kc), KVOf(vc), 1, heads, kvHeads, hd, maxT, seq, pos, 0.125)
	}); a != 0 {
		t.Errorf("attention, one row after two: %v allocations per run", a)
	}
}

func TestMeasure(t *testing.T) {
	c := withCtx(t, 2)
	if bw := MeasureReadBandwidth(c, 64<<20); !(bw > 0.1) {
		t.Fatalf("bandwidth %v", bw)
	}
	if f := MeasurePeakGFLOPS(c); !(f > 0.1) {
		t.Fatalf("peak %v", f)
	}
	// The bf16 dot product's peak: measured where it runs, 0 elsewhere.
	if d := MeasurePeakBF16DotGFLOPS(c); HasBF16Dot() != (d > 0.1) || (!HasBF16Dot() && d != 0) {
		t.Fatalf("bf16 dot product peak %v with HasBF16Dot %v", d, HasBF16Dot())
	}
	old := useBF16Dot
	useBF16Dot = false
	d := MeasurePeakBF16DotGFLOPS(c)
	useBF16Dot = old
	if d != 0 {
		t.Fatalf("bf16 dot product peak %v without it, want 0", d)
	}
	s := ProbeBandwidth(c, []int{8 << 20, 16 << 20}, 3)
	if len(s) != 4 {
		t.Fatalf("%d samples, want 2 sizes x 2 worker counts", len(s))
	}
	for i, x := range s {
		if want := []int{1, 2}[i%2]; x.Workers != want || x.Passes != 3 {
			t.Errorf("sample %d: %+v, want %d workers and 3 passes", i, x, want)
		}
		if x.Bytes > []int{8 << 20, 16 << 20}[i/2] || x.Bytes < []int{8 << 20, 16 << 20}[i/2]*9/10 {
			t.Errorf("sample %d reads %d bytes", i, x.Bytes)
		}
		if !(x.Median > 0 && x.Best >= x.Median) {
			t.Errorf("sample %d: best %v, median %v", i, x.Best, x.Median)
		}
	}
	if b := BandwidthBound(s); b < s[0].Best || b < s[3].Best {
		t.Errorf("bound %v below a sample's best", b)
	}
}

// TestReadBuffers: each buffer is read in whole 256-byte runs a worker,
// whatever its bytes hold (NaN patterns too); one too short for a run is
// skipped, and the sums go nowhere (the buffers are left as they were).
func TestReadBuffers(t *testing.T) {
	for _, workers := range []int{1, 2, 3} {
		c := withCtx(t, workers)
		run := 256 * workers
		bufs := [][]byte{nil, make([]byte, run-1), make([]byte, run), make([]byte, 5*run+17), make([]byte, 1<<20)}
		for i := range bufs[4] {
			bufs[4][i] = 0xff // NaNs as float32
		}
		want := 0 + 0 + run + 5*run + (1<<20)/run*run
		if got := c.ReadBuffers(bufs); got != want {
			t.Errorf("%d workers: read %d bytes, want %d", workers, got, want)
		}
		for i, b := range bufs[4] {
			if b != 0xff {
				t.Fatalf("%d workers: byte %d of a read buffer changed to %#x", workers, i, b)
			}
		}
		if got := c.ReadBuffers(nil); got != 0 {
			t.Errorf("%d workers: no buffers read %d bytes", workers, got)
		}
	}
}

// kernel modes available on this machine: 0 Go fallback, 1 AVX2, 2 AVX2 +
// AVX-512 GEMM, 3 mode 2 with the other prefetch variant (prefetchL2
// flipped), so that both are tested whichever this machine picks.
type mode int

func (m mode) String() string { return [...]string{"go", "avx2", "avx512", "avx512-otherprefetch"}[m] }

var defaultAsm, defaultAVX512, defaultPrefetchL2 = useAsm, useAVX512, prefetchL2

func asmModes() []mode {
	ms := []mode{0}
	if defaultAsm {
		ms = append(ms, 1)
	}
	if defaultAVX512 {
		ms = append(ms, 2, 3)
	}
	return ms
}

// setMode selects the kernels for the rest of the test.
func setMode(t testing.TB, m mode) {
	useAsm, useAVX512 = m >= 1, m >= 2
	prefetchL2 = defaultPrefetchL2 != (m == 3)
	t.Cleanup(func() { useAsm, useAVX512, prefetchL2 = defaultAsm, defaultAVX512, defaultPrefetchL2 })
}

// setAsm(false) selects the Go fallback.
func setAsm(t testing.TB, v bool) {
	if v {
		setMode(t, min(asmModes()[len(asmModes())-1], 2)) // the default prefetch
	} else {
		setMode(t, 0)
	}
}

// The vector expf/silu/softmax (assembly) must give the same bits as the Go
// code, including special values.
func TestVectorExpMatchesGo(t *testing.T) {
	if !useAsm {
		t.Skip("no assembly kernels")
	}
	rng := rand.New(rand.NewPCG(23, 24))
	xs := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 88.72283, 88.7228, 88.3763, 88.38, -87.33654, -87.3365, -87.4, -87.2,
		89, -104, 1e30, -1e30, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e-40, -1e-40, 0.5, -0.5}
	for len(xs)%8 != 0 || len(xs) < 4096 {
		switch len(xs) % 3 {
		case 0:
			xs = append(xs, float32((rng.Float64()*2-1)*100))
		case 1:
			xs = append(xs, float32((rng.Float64()*2-1)*5))
		default:
			xs = append(xs, float32(rng.NormFloat64()*1e-3))
		}
	}
	// Both vector widths where the machine has AVX-512 (16 lanes a step,
	// and an 8-lane last step when n is 8 mod 16).
	widths := []bool{useAVX512}
	if useAVX512 {
		widths = append(widths, false)
	}
	for _, wide := range widths {
		old := useAVX512
		useAVX512 = wide
		for _, n := range []int{len(xs), len(xs) - 8, 8, 16, 24} {
			e := append([]float32(nil), xs[:n]...)
			var sums [4]float64
			expSumVec(e, n, 0, &sums)
			var want [4]float64
			for i, x := range xs[:n] {
				g := expf(x)
				if math.Float32bits(e[i]) != math.Float32bits(g) && !(g != g && e[i] != e[i]) {
					t.Fatalf("avx512=%v n=%d: vector expf(%v) = %v, Go expf = %v", wide, n, x, e[i], g)
				}
				want[i&3] += float64(g)
			}
			if sums != want && !math.IsNaN(want[0]+want[1]+want[2]+want[3]) {
				t.Fatalf("avx512=%v n=%d: sums %v want %v", wide, n, sums, want)
			}
		}
		useAVX512 = old
	}
	n := len(xs)
	y := make([]float32, n)
	u := randSlice(rng, n)
	for _, up := range [][]float32{nil, u} {
		siluVec(y, xs, up, n)
		for i, x := range xs {
			g := silu(x)
			if up != nil {
				g *= up[i]
			}
			if math.Float32bits(y[i]) != math.Float32bits(g) && !(g != g && y[i] != y[i]) {
				t.Fatalf("vector silu(%v) (u=%v) = %v, Go = %v", x, up != nil, y[i], g)
			}
		}
	}
	// softmax: vector path vs pure Go path, for several lengths.
	for _, T := range []int{1, 7, 8, 9, 31, 100, 2048} {
		s := randSlice(rng, T)
		a, b := append([]float32(nil), s...), append([]float32(nil), s...)
		softmaxScaled(a, 0.3)
		setAsm(t, false)
		softmaxScaled(b, 0.3)
		setAsm(t, true)
		if i := bitsEqual(a, b); i >= 0 {
			t.Fatalf("softmax T=%d: vector %v, Go %v at %d", T, a[i], b[i], i)
		}
	}
}

// TestSliceCols: the column window of every row, for row counts below and
// above one task and every worker count, nothing written past rows*cols.
func TestSliceCols(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	for _, workers := range []int{1, 2, 3} {
		c := withCtx(t, workers)
		for _, sh := range [][4]int{{1, 4096, 2048, 1024}, {7, 96, 0, 64}, {512, 4096, 3072, 1024}, {33, 3000, 1000, 2000}, {5, 8, 8, 0}} {
			rows, src, start, cols := sh[0], sh[1], sh[2], sh[3]
			x := randSlice(rng, rows*src)
			y := make([]float32, rows*cols+1)
			y[rows*cols] = 42
			c.SliceCols(y, x, rows, src, start, cols)
			for r := 0; r < rows; r++ {
				for j := 0; j < cols; j++ {
					if y[r*cols+j] != x[r*src+start+j] {
						t.Fatalf("workers=%d %v: y[%d][%d] = %v, want %v", workers, sh, r, j, y[r*cols+j], x[r*src+start+j])
					}
				}
			}
			if y[rows*cols] != 42 {
				t.Fatalf("workers=%d %v: wrote past rows*cols", workers, sh)
			}
		}
	}
}
