package lwe

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/crypto/chacha20"
	"golang.org/x/crypto/hkdf"
)

// TestSamplerStatistics: every s has exactly h distinct positions in
// [0, lambda); positions are uniform and signs balanced (chi-square); e
// follows CBD(2) (histogram 1:4:6:4:1 / 16, chi-square) with odd values
// exactly half the time. Bounds are about 5 sigma on fixed seeds.
func TestSamplerStatistics(t *testing.T) {
	for _, tc := range []struct{ lambda, h, in, pads int }{
		{64, 6, 64, 8000}, {4096, 80, 16, 400}, {10, 10, 8, 500}, {7, 1, 8, 2000},
	} {
		t.Run(fmt.Sprintf("lambda%d-h%d", tc.lambda, tc.h), func(t *testing.T) {
			p := Params{Lambda: tc.lambda, H: tc.h, Delta: 16}
			a, _ := NewPublic(testSeed(3), tc.in, tc.lambda)
			g, err := NewPadGen(p, a, nil, testKey, "stats")
			if err != nil {
				t.Fatal(err)
			}
			pos := make([]float64, tc.lambda)
			var neg, total float64
			hist := make([]float64, 5)
			e := make([]uint32, tc.in)
			for n := range uint64(tc.pads) {
				if err := g.draw(n, e); err != nil {
					t.Fatal(err)
				}
				seen := map[int32]bool{}
				for k, c := range g.idx {
					if c < 0 || int(c) >= tc.lambda || seen[c] {
						t.Fatalf("pad %d: support %v is not %d distinct positions in [0, %d)", n, g.idx, tc.h, tc.lambda)
					}
					seen[c] = true
					pos[c]++
					if g.sgn[k] != 0 {
						if g.sgn[k] != 0xffffffff {
							t.Fatalf("sign word %#x", g.sgn[k])
						}
						neg++
					}
					total++
				}
				for i, v := range e {
					x := int32(v)
					if x < -2 || x > 2 {
						t.Fatalf("pad %d: e[%d] = %d outside CBD(2)'s [-2, 2]", n, i, x)
					}
					hist[x+2]++
				}
			}
			g.Forget()
			// Positions: lambda bins, lambda - 1 degrees of freedom (h = lambda: all equal).
			if tc.h < tc.lambda {
				chi := chiSquare(pos, uniform(tc.lambda))
				if df := float64(tc.lambda - 1); chi > df+5*math.Sqrt(2*df) {
					t.Errorf("positions: chi-square %.1f with %v degrees of freedom", chi, df)
				}
			}
			if chi := chiSquare([]float64{neg, total - neg}, []float64{0.5, 0.5}); chi > 25 {
				t.Errorf("signs: %v negative of %v, chi-square %.1f", neg, total, chi)
			}
			if chi := chiSquare(hist, []float64{1. / 16, 4. / 16, 6. / 16, 4. / 16, 1. / 16}); chi > 4+5*math.Sqrt(8) {
				t.Errorf("e histogram %v, chi-square %.1f against CBD(2)", hist, chi)
			}
			odd := hist[1] + hist[3]
			if chi := chiSquare([]float64{odd, hist[0] + hist[2] + hist[4]}, []float64{0.5, 0.5}); chi > 25 {
				t.Errorf("e odd %v of %v: parity biased (chi-square %.1f)", odd, total, chi)
			}
		})
	}
}

func uniform(n int) []float64 {
	p := make([]float64, n)
	for i := range p {
		p[i] = 1 / float64(n)
	}
	return p
}

func chiSquare(obs, prob []float64) float64 {
	var n, chi float64
	for _, o := range obs {
		n += o
	}
	for i, o := range obs {
		e := n * prob[i]
		chi += (o - e) * (o - e) / e
	}
	return chi
}

// TestPadDefinition: m = A s + e and u_i = H_i s, against an int64
// reference from the pad's own s and e, for two hints; the pad depends on
// (key, counter) only, and differs across counters and keys.
func TestPadDefinition(t *testing.T) {
	p := Params{Lambda: 40, H: 7, Delta: 16}
	w1, w2 := quantized(t, wGauss, 6, 24, 1), quantized(t, wMax, 3, 24, 2)
	sc := newScheme(t, p, w1, w2)
	for _, n := range []uint64{0, 1, 1 << 63} {
		pad := sc.gen.New()
		if err := sc.gen.Fill(n, pad); err != nil {
			t.Fatal(err)
		}
		s, e := sc.secret(t, n)
		acols := columns(sc.a.Lambda, sc.a.Col)
		for i, m := range pad.M {
			ref := e[i]
			for k, sk := range s {
				ref += sk * int64(acols[k][i])
			}
			if m != uint32(ref) {
				t.Fatalf("pad %d: m[%d] = %#x, want %#x", n, i, m, uint32(ref))
			}
		}
		for hi, h := range sc.hints {
			hcols := columns(h.Lambda, h.Col)
			for j, u := range pad.U[hi] {
				var ref int64
				for k, sk := range s {
					ref += sk * int64(hcols[k][j])
				}
				if u != uint32(ref) {
					t.Fatalf("pad %d hint %d: u[%d] = %#x, want %#x", n, hi, j, u, uint32(ref))
				}
			}
		}
	}
	a, b := sc.gen.New(), sc.gen.New()
	_ = sc.gen.Fill(3, a)
	_ = sc.gen.Fill(4, b)
	if slices.Equal(a.M, b.M) {
		t.Fatal("counters 3 and 4 give one pad")
	}
	other, _ := NewPadGen(p, sc.a, sc.hints, []byte("another key"), "test")
	_ = other.Fill(3, b)
	if slices.Equal(a.M, b.M) {
		t.Fatal("two keys give one pad")
	}
	named, _ := NewPadGen(p, sc.a, sc.hints, testKey, "test2")
	_ = named.Fill(3, b)
	if slices.Equal(a.M, b.M) {
		t.Fatal("two names give one pad")
	}
	same, _ := NewPadGen(p, sc.a, sc.hints, testKey, "test")
	_ = same.Fill(3, b)
	if !slices.Equal(a.M, b.M) || !slices.Equal(a.U[1], b.U[1]) {
		t.Fatal("one key, name and counter give two pads")
	}
	other.Forget()
	if err := other.Fill(3, b); err == nil {
		t.Fatal("Fill after Forget succeeded")
	}
}

// padDigest hashes the first count pads of a pool.
func padDigest(t *testing.T, pl *Pool, count int) [32]byte {
	t.Helper()
	h := sha256.New()
	for range count {
		pad, err := pl.Get()
		if err != nil {
			t.Fatal(err)
		}
		h.Write(binary.LittleEndian.AppendUint64(nil, pad.Counter))
		for _, w := range pad.M {
			h.Write(binary.LittleEndian.AppendUint32(nil, w))
		}
		for _, u := range pad.U {
			for _, w := range u {
				h.Write(binary.LittleEndian.AppendUint32(nil, w))
			}
		}
		if err := pl.Put(pad); err != nil {
			t.Fatal(err)
		}
	}
	return [32]byte(h.Sum(nil))
}

// TestPoolDeterministic: a pool's pads, in order, are the generator's pads
// of counters start, start + 1, ..., whatever GOMAXPROCS (1, 2, 8), the
// worker count and the buffer size.
func TestPoolDeterministic(t *testing.T) {
	p := Params{Lambda: 64, H: 8, Delta: 16}
	w := quantized(t, wGauss, 12, 48, 1)
	sc := newScheme(t, p, w)
	const start, count = 100, 37
	ref := sha256.New()
	for n := uint64(start); n < start+count; n++ {
		pad := sc.gen.New()
		_ = sc.gen.Fill(n, pad)
		ref.Write(binary.LittleEndian.AppendUint64(nil, n))
		for _, x := range append(slices.Clone(pad.M), pad.U[0]...) {
			ref.Write(binary.LittleEndian.AppendUint32(nil, x))
		}
	}
	want := [32]byte(ref.Sum(nil))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 8} {
		for _, tc := range []struct{ size, workers int }{{1, 1}, {4, 2}, {9, 3}, {3, 8}} {
			t.Run(fmt.Sprintf("procs%d-size%d-workers%d", procs, tc.size, tc.workers), func(t *testing.T) {
				runtime.GOMAXPROCS(procs)
				pl, err := NewPool(p, sc.a, sc.hints, testKey, "test", start, tc.size, tc.workers)
				if err != nil {
					t.Fatal(err)
				}
				defer pl.Close()
				if got := padDigest(t, pl, count); got != want {
					t.Fatalf("pool pads differ from the generator's")
				}
			})
		}
	}
}

// TestPoolLifecycle: Put refuses a pad given back twice or from another
// pool; the pool's memory is what it says; Close wipes the buffered pads
// and Get after Close fails.
func TestPoolLifecycle(t *testing.T) {
	p := Params{Lambda: 16, H: 4, Delta: 16}
	w := quantized(t, wGauss, 5, 12, 1)
	sc := newScheme(t, p, w)
	pl, err := NewPool(p, sc.a, sc.hints, testKey, "test", 0, 5, 2)
	if err != nil {
		t.Fatal(err)
	}
	if pl.Size() != 6 || pl.Bytes() != 6*4*(12+5) {
		t.Fatalf("size %d bytes %d, want 6 and %d", pl.Size(), pl.Bytes(), 6*4*17)
	}
	pad, err := pl.Get()
	if err != nil || pad.Counter != 0 {
		t.Fatalf("first pad %v, %v", pad, err)
	}
	if err := pl.Put(pad); err != nil {
		t.Fatal(err)
	}
	if err := pl.Put(pad); err == nil {
		t.Fatal("pad given back twice accepted")
	}
	foreign := sc.gen.New()
	_ = sc.gen.Fill(0, foreign)
	if err := pl.Put(foreign); err == nil {
		t.Fatal("a pad the pool did not hand out accepted")
	}
	held, _ := pl.Get()
	pl.Close()
	pl.Close() // idempotent
	if _, err := pl.Get(); !errors.Is(err, ErrPoolClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
	if held.Counter != 1 {
		t.Fatalf("second pad has counter %d", held.Counter)
	}
	for w := range pl.free {
		for _, ch := range []chan *Pad{pl.free[w], pl.ready[w]} {
			if len(ch) != 0 {
				t.Fatalf("worker %d: %d pads left after Close", w, len(ch))
			}
		}
	}
	if pl.gens[0].key != nil {
		t.Fatal("generator key kept after Close")
	}
	if _, err := NewPool(p, sc.a, sc.hints, nil, "test", 0, 4, 1); err == nil {
		t.Fatal("pool with an empty key started")
	}
}

// TestPoolCloseWhileWaiting: a Get blocked on a worker that can never
// fill (its buffers all held) returns ErrPoolClosed when the pool closes.
func TestPoolCloseWhileWaiting(t *testing.T) {
	p := Params{Lambda: 16, H: 4, Delta: 16}
	w := quantized(t, wGauss, 5, 12, 1)
	sc := newScheme(t, p, w)
	pl, err := NewPool(p, sc.a, sc.hints, testKey, "test", 0, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pl.Get(); err != nil { // held: the only buffer
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { _, err := pl.Get(); done <- err }()
	time.Sleep(20 * time.Millisecond) // let it block on the worker (if not, it sees closed: same result)
	pl.Close()
	if err := <-done; !errors.Is(err, ErrPoolClosed) {
		t.Fatalf("blocked Get: %v", err)
	}
}

// TestPadStreamLayout rebuilds s and e of one pad from PadGen's documented
// stream alone (x/crypto's HKDF and ChaCha20; Floyd's draws, sign bits,
// 4-bit CBD(2) nibbles), so an outside tool reading the doc gets the same
// pad.
func TestPadStreamLayout(t *testing.T) {
	p := Params{Lambda: 100, H: 70, Delta: 16} // 70 signs: two sign words
	a, _ := NewPublic(testSeed(3), 21, p.Lambda)
	const name, n = "layers.0.qkv", 12345
	g, err := NewPadGen(p, a, nil, testKey, name)
	if err != nil {
		t.Fatal(err)
	}
	e := make([]uint32, a.In)
	if err := g.draw(n, e); err != nil {
		t.Fatal(err)
	}
	info := binary.BigEndian.AppendUint64([]byte("pad"), n)
	info = append(info, name...)
	okm := make([]byte, 44)
	if _, err := io.ReadFull(hkdf.New(sha256.New, testKey, []byte(PadSalt), info), okm); err != nil {
		t.Fatal(err)
	}
	c, _ := chacha20.NewUnauthenticatedCipher(okm[:32], okm[32:])
	word := func() uint64 {
		var b [8]byte
		c.XORKeyStream(b[:], b[:])
		return binary.LittleEndian.Uint64(b[:])
	}
	var idx []int32
	for j := p.Lambda - p.H; j < p.Lambda; j++ {
		hi, _ := bits.Mul64(word(), uint64(j+1))
		if slices.Contains(idx, int32(hi)) {
			hi = uint64(j)
		}
		idx = append(idx, int32(hi))
	}
	if !slices.Equal(idx, g.idx) {
		t.Fatalf("support %v, the doc's %v", g.idx, idx)
	}
	sw := []uint64{word(), word()}
	for k := range p.H {
		if neg := sw[k/64]>>(k%64)&1 == 1; neg != (g.sgn[k] != 0) {
			t.Fatalf("sign %d differs", k)
		}
	}
	var ew uint64
	for i := range e {
		if i%16 == 0 {
			ew = word()
		}
		nib := ew >> (4 * (i % 16))
		want := int32(bits.OnesCount64(nib&3)) - int32(bits.OnesCount64(nib>>2&3))
		if int32(e[i]) != want {
			t.Fatalf("e[%d] = %d, the doc's %d", i, int32(e[i]), want)
		}
	}
}
