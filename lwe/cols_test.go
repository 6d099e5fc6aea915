package lwe

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// colsRef is the signed column sum by its definition: add or subtract each
// column word by word, with a branch on the sign.
func colsRef(dst, t []uint32, off, stride int, idx []int32, sgn []uint32) {
	for k, c := range idx {
		col := t[int(c)*stride+off:]
		for i := range dst {
			if sgn[k] == 0 {
				dst[i] += col[i]
			} else {
				dst[i] -= col[i]
			}
		}
	}
}

// colsCase draws a matrix of cols columns of stride words (random words,
// with runs of 0, 2^31 and 2^32 - 1), h column indices (repeats allowed:
// the kernel must not care) and signs, and a random dst.
func colsCase(r *rand.Rand, cols, stride, n, h int) (t, dst []uint32, idx []int32, sgn []uint32) {
	t = make([]uint32, cols*stride)
	for i := range t {
		switch r.IntN(8) {
		case 0:
			t[i] = 0xffffffff
		case 1:
			t[i] = 0x80000000
		case 2:
			t[i] = 0
		default:
			t[i] = r.Uint32()
		}
	}
	dst = make([]uint32, n)
	for i := range dst {
		dst[i] = r.Uint32()
	}
	idx, sgn = make([]int32, h), make([]uint32, h)
	for k := range idx {
		idx[k] = int32(r.IntN(cols))
		sgn[k] = -uint32(r.IntN(2))
	}
	return t, dst, idx, sgn
}

// TestAddColumns: addColumnsAt, addTileAt and addTilePf (AVX2 where the CPU has it)
// and the portable addColsGo each equal the definition word for word, for
// widths around the kernels' 8- and 64-word steps, column counts around
// the 4-column groups, a packed tile (stride = n) and a block inside longer columns
// (stride > n, offset > 0), with extreme words and all-negative signs.
func TestAddColumns(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for _, n := range []int{1, 7, 8, 9, 15, 16, 31, 63, 64, 65, 100, 128, 200, 1024, 1031} {
		for _, h := range []int{1, 3, 4, 5, 7, 8, 80} {
			for _, layout := range []struct{ extra, off int }{{0, 0}, {13, 5}, {n, n}} {
				name := fmt.Sprintf("n%d-h%d-stride+%d-off%d", n, h, layout.extra, layout.off)
				stride := n + layout.extra
				tm, dst, idx, sgn := colsCase(r, 37, stride, n, h)
				if h == 7 {
					for k := range sgn {
						sgn[k] = 0xffffffff
					}
				}
				want := slices.Clone(dst)
				colsRef(want, tm, layout.off, stride, idx, sgn)
				for _, kind := range []string{"columns", "tile", "go", "tilepf"} {
					got := slices.Clone(dst)
					switch kind {
					case "tilepf": // a sub-tile's form: offset 0, prefetching a run ahead
						if layout.off != 0 {
							continue
						}
						addTilePf(got, tm, stride, idx, sgn, 256)
					case "go":
						addColsGo(got, tm, layout.off, stride, idx, sgn)
					case "tile":
						addTileAt(got, tm, layout.off, stride, idx, sgn)
					default:
						addColumnsAt(got, tm, layout.off, stride, idx, sgn)
					}
					if i := firstDiff(got, want); i >= 0 {
						t.Fatalf("%s %s (asm %v): word %d = %#x, want %#x", name, kind, useAsm, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestAddColumnsAsmVsGo: the AVX2 kernels (and the AVX-512 tile kernel
// where the CPU has it) and the Go form give the same
// words on the pads' real shapes (a 1024-word block of 4096-word columns,
// a 64-word packed tile, h = 80) and ragged ones; the Go path is what a CPU without AVX2
// (or a purego build) runs.
func TestAddColumnsAsmVsGo(t *testing.T) {
	if !useAsm {
		t.Skip("no AVX2 here: only the Go form runs (TestAddColumns checks it)")
	}
	r := rand.New(rand.NewPCG(6, 6))
	for _, tc := range []struct{ cols, stride, off, n, h int }{
		{4096, 4096, 1024, 1024, 80}, {4096, 64, 0, 64, 80}, {512, 40, 0, 40, 81}, {300, 1031, 1024, 7, 80}, {100, 200, 3, 197, 5},
	} {
		tm, dst, idx, sgn := colsCase(r, tc.cols, tc.stride, tc.n, tc.h)
		for _, kernel := range []struct {
			name string
			f    func(dst, t []uint32, off, stride int, idx []int32, sgn []uint32)
		}{{"columns", addColumnsAt}, {"tile", addTileAt}} {
			asm, avx2, gold := slices.Clone(dst), slices.Clone(dst), slices.Clone(dst)
			kernel.f(asm, tm, tc.off, tc.stride, idx, sgn)
			had512 := use512
			use512 = false
			kernel.f(avx2, tm, tc.off, tc.stride, idx, sgn)
			use512 = had512
			useAsm = false
			kernel.f(gold, tm, tc.off, tc.stride, idx, sgn)
			useAsm = true
			if i := firstDiff(asm, gold); i >= 0 {
				t.Fatalf("%s %+v (AVX-512 %v): word %d asm %#x, go %#x", kernel.name, tc, use512, i, asm[i], gold[i])
			}
			if i := firstDiff(avx2, gold); i >= 0 {
				t.Fatalf("%s %+v AVX2: word %d asm %#x, go %#x", kernel.name, tc, i, avx2[i], gold[i])
			}
		}
	}
}

// TestAddColumnsRefusesOutside: a column index outside the matrix (past
// its end, negative, or a block that runs past the last column) panics
// before any word is read or written.
func TestAddColumnsRefusesOutside(t *testing.T) {
	tm := make([]uint32, 10*16)
	for i := range tm {
		tm[i] = 1 // a sum that ran would show in dst
	}
	for _, tc := range []struct {
		name      string
		off, n    int
		idx       []int32
		wantPanic bool
	}{
		{"last column", 0, 16, []int32{0, 9, 3, 4}, false},
		{"past the end", 0, 16, []int32{0, 10, 3, 4}, true},
		{"negative", 0, 16, []int32{1, 2, -1, 4}, true},
		{"most negative", 0, 16, []int32{-1 << 31, 2, 3, 4}, true},
		{"block past the end", 8, 16, []int32{9, 0, 0, 0}, true},
		{"block inside", 8, 8, []int32{9, 0, 0, 0}, false},
	} {
		for kernel, f := range map[string]func(dst, t []uint32, off, stride int, idx []int32, sgn []uint32){
			"columns": addColumnsAt, "tile": addTileAt,
		} {
			t.Run(tc.name+"/"+kernel, func(t *testing.T) {
				dst := make([]uint32, tc.n)
				var msg string
				func() {
					defer func() {
						if p := recover(); p != nil {
							msg = fmt.Sprint(p)
						}
					}()
					f(dst, tm, tc.off, 16, tc.idx, make([]uint32, len(tc.idx)))
				}()
				if tc.wantPanic != (msg != "") || (msg != "" && !strings.Contains(msg, "lwe: column sum")) {
					t.Fatalf("panic %q, want a panic: %v", msg, tc.wantPanic)
				}
				if tc.wantPanic && slices.ContainsFunc(dst, func(v uint32) bool { return v != 0 }) {
					t.Fatal("dst written before the refusal")
				}
			})
		}
	}
}

// firstDiff is the first index where a and b differ, or -1.
func firstDiff(a, b []uint32) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}
