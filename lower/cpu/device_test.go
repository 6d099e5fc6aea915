package cpu_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gelo/device/wire"
	"gelo/lower/cpu"
	"gelo/lower/cpu/kernels"
	"gelo/lwe"
)

// int8Matrix is a wire.Int8 weight [rows, cols] of random integers with
// -127 and 127 among them (every one 127 when all127), and the same
// integers as lwe.Weights for the reference product.
func int8Matrix(t *testing.T, r *rand.Rand, rows, cols int, all127 bool) (*wire.Matrix, *lwe.Weights) {
	t.Helper()
	m := &wire.Matrix{Format: wire.Int8, Rows: rows, Cols: cols}
	m.Data = make([]byte, rows*m.RowBytes())
	q := make([]int8, rows*cols)
	for j := range rows {
		row := m.Data[j*m.RowBytes() : (j+1)*m.RowBytes()]
		for i := range cols {
			v := int8(r.IntN(255) - 127)
			switch {
			case all127:
				v = 127
			case i%5 == 0:
				v = -127
			case i%7 == 0:
				v = 127
			}
			row[i], q[j*cols+i] = byte(v), v
		}
		copy(row[cols:], []byte{0, 0, 0x80, 0x3f}) // scale 1: ignored
	}
	lw, err := lwe.NewWeights(q, make([]float32, rows), rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	return m, lw
}

// The local device's lwe product equals lwe.MulRef word for word: odd
// widths and output counts, m = 1, 3 and 64, random words and a wrap case
// (every word near 2^32 - 1, every weight 127).
func TestLocalDeviceMatMulU32(t *testing.T) {
	ctx := kernels.NewCtx(2)
	defer ctx.Close()
	dev := cpu.NewLocalDevice(ctx)
	r := rand.New(rand.NewPCG(50, 10))
	for _, tc := range []struct {
		name          string
		m, rows, cols int
		wrap          bool
	}{
		{"m1", 1, 13, 37, false},
		{"m3", 3, 33, 1027, false},
		{"m64", 64, 9, 64, false},
		{"wrap", 3, 5, 1031, true},
	} {
		w, lw := int8Matrix(t, r, tc.rows, tc.cols, tc.wrap)
		if err := dev.UploadQ(tc.name, w); err != nil {
			t.Fatal(err)
		}
		c := make([]uint32, tc.m*tc.cols)
		for i := range c {
			c[i] = r.Uint32()
			if tc.wrap {
				c[i] = ^uint32(r.IntN(16))
			}
		}
		y, want := make([]uint32, tc.m*tc.rows), make([]uint32, tc.m*tc.rows)
		if err := dev.MatMulU32("matmul", tc.name, c, tc.m, y); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if err := lwe.MulRef(lw, c, want); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(y, want) {
			t.Fatalf("%s: the device's product differs from lwe.MulRef", tc.name)
		}
	}
}

// MatMulU32 refuses, naming the weight: one never uploaded, weights with
// no int8 integers (f32, bf16, q8_0 blocks), and lengths that do not hold
// m rows of the weight's shape.
func TestLocalDeviceMatMulU32Refusals(t *testing.T) {
	ctx := kernels.NewCtx(1)
	defer ctx.Close()
	dev := cpu.NewLocalDevice(ctx)
	r := rand.New(rand.NewPCG(50, 11))
	i8, _ := int8Matrix(t, r, 3, 5, false)
	q8, err := wire.Quantize(wire.Q8_0, make([]float32, 3*32), 3, 32)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		dev.UploadQ("i8", i8), dev.UploadQ("q8", q8),
		dev.Upload("f32", make([]float32, 15), 3, 5), dev.UploadBF16("bf16", make([]uint16, 15), 3, 5),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, weight string
		c, m, y      int
		want         string
	}{
		{"unknown", "nope", 5, 1, 3, `weight "nope" was never uploaded`},
		{"f32", "f32", 5, 1, 3, `"f32": the u32 product needs a weight uploaded as`},
		{"bf16", "bf16", 5, 1, 3, `"bf16": the u32 product needs a weight uploaded as`},
		{"q8_0", "q8", 32, 1, 3, `"q8": the u32 product needs a weight uploaded as`},
		{"short c", "i8", 9, 2, 6, `c holds 9 words and y 6, want 2 x 5 and 2 x 3`},
		{"long y", "i8", 10, 2, 7, `c holds 10 words and y 7, want 2 x 5 and 2 x 3`},
		{"negative m", "i8", 0, -1, 0, `want -1 x 5`},
	} {
		err := dev.MatMulU32("matmul", tc.weight, make([]uint32, tc.c), tc.m, make([]uint32, tc.y))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	// An empty batch is no error.
	if err := dev.MatMulU32("matmul", "i8", nil, 0, nil); err != nil {
		t.Fatalf("m = 0: %v", err)
	}
}
