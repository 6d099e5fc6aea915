package lwe

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// TestProbes: an honest product passes every probe; an odd error in one
// word fails every probe; a flip of one output's top bit (E = 2^31 e_j,
// the worst case) passes one probe about half the time, as the soundness
// statement says, and k probes about 2^-k of the time.
func TestProbes(t *testing.T) {
	const out, in, rows, size = 37, 53, 5, 64
	w := quantized(t, wGauss, out, in, 3)
	pr, err := NewProbes(w, []byte("probe test key, 32 bytes long..."), "w", size)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(4, 5))
	c := make([]uint32, rows*in)
	for i := range c {
		c[i] = rng.Uint32()
	}
	y := make([]uint32, rows*out)
	for r := range rows {
		if err := MulRef(w, c[r*in:(r+1)*in], y[r*out:(r+1)*out]); err != nil {
			t.Fatal(err)
		}
	}
	all := make([]int, size)
	for k := range all {
		all[k] = k
	}
	if err := pr.Check(y, c, rows, all); err != nil {
		t.Fatalf("honest product: %v", err)
	}
	bad := append([]uint32(nil), y...)
	bad[2*out+7] += 3 // odd: every probe sees it
	for k := range size {
		if err := pr.Check(bad, c, rows, []int{k}); !errors.Is(err, ErrProduct) {
			t.Fatalf("an odd error passes probe %d", k)
		}
	}
	passed := 0
	for trial := range 400 {
		bad := append([]uint32(nil), y...)
		bad[(trial%rows)*out+trial%out] ^= 1 << 31
		if pr.Check(bad, c, rows, []int{trial % size}) == nil {
			passed++
		}
	}
	// Binomial(400, 1/2): 200 +- 10; 140..260 is six standard deviations.
	if passed < 140 || passed > 260 {
		t.Errorf("a top-bit flip passes one probe %d times of 400, want about half", passed)
	}
	missed := 0
	for trial := range 400 {
		bad := append([]uint32(nil), y...)
		bad[(trial%rows)*out+trial%out] ^= 1 << 31
		if pr.Check(bad, c, rows, []int{trial % size, (trial + 1) % size, (trial + 2) % size, (trial + 3) % size,
			(trial + 4) % size, (trial + 5) % size, (trial + 6) % size, (trial + 7) % size}) == nil {
			missed++
		}
	}
	// 8 probes: 2^-8 each, about 1.6 of 400.
	if missed > 8 {
		t.Errorf("a top-bit flip passes 8 probes %d times of 400, want about 2", missed)
	}
	if err := pr.Check(y[:out], c, rows, all); err == nil {
		t.Error("short product accepted")
	}
	if err := pr.Check(y, c, rows, []int{size}); err == nil {
		t.Error("probe index outside the pool accepted")
	}
}

// TestDot4: dot4 (AVX2 where the CPU has it, Go tails) equals four dot32s
// word for word at lengths around the 8-word step, with extreme words.
func TestDot4(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 7))
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 100, 4096, 4103} {
		var a [4][]uint32
		for j := range a {
			a[j] = make([]uint32, n+j) // rows may be longer than b
			for i := range a[j] {
				a[j][i] = rng.Uint32() | uint32(i%3/2)<<31
			}
		}
		b := make([]uint32, n)
		for i := range b {
			b[i] = ^uint32(0) - uint32(rng.IntN(3))
		}
		var got [4]uint32
		dot4(&a, b, &got)
		for j := range a {
			if want := dot32(a[j][:n], b); got[j] != want {
				t.Fatalf("n %d row %d (asm %v): %#x, want %#x", n, j, useAsm, got[j], want)
			}
		}
	}
}
