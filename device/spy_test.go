package device

import (
	"slices"
	"strings"
	"testing"

	"gelo/device/wire"
)

// echo is a Device that returns y = row sums of x (enough to see what the
// spy records on the way back).
type echo struct{ shapes map[string][2]int }

func (e *echo) Upload(name string, w []float32, rows, cols int) error {
	e.shapes[name] = [2]int{rows, cols}
	return nil
}
func (e *echo) UploadBF16(name string, w []uint16, rows, cols int) error {
	return e.Upload(name, nil, rows, cols)
}
func (e *echo) UploadQ(name string, w *wire.Matrix) error { return e.Upload(name, nil, w.Rows, w.Cols) }
func (e *echo) MatMul(op, weight string, x []float32, m int, y []float32) error {
	for i := range y {
		y[i] = float32(i)
	}
	return nil
}
func (e *echo) MatMulQ(op, weight string, x *wire.Activations, y []float32) error {
	return e.MatMul(op, weight, nil, x.Rows(), y)
}

func TestSpyRecordsEveryCrossing(t *testing.T) {
	spy := NewSpy(&echo{shapes: map[string][2]int{}})
	if err := spy.Upload("w", make([]float32, 2*32), 2, 32); err != nil {
		t.Fatal(err)
	}
	x := make([]float32, 32)
	x[3] = 1.5
	y := make([]float32, 2)
	if err := spy.MatMul("matmul", "w", x, 1, y); err != nil {
		t.Fatal(err)
	}
	var a wire.Activations
	if err := a.Quantize(x, 1, 32); err != nil {
		t.Fatal(err)
	}
	if err := spy.MatMulQ("matmul", "w", &a, y); err != nil {
		t.Fatal(err)
	}
	r := spy.Record()
	if len(r) != 4 || spy.Len() != 4 || !slices.Equal(spy.Uploads(), []string{"w"}) {
		t.Fatalf("%d crossings, uploads %v", len(r), spy.Uploads())
	}
	want := []struct {
		dir        Direction
		rows, cols int
		q8         bool
	}{{ToDevice, 1, 32, false}, {ToTEE, 1, 2, false}, {ToDevice, 1, 32, true}, {ToTEE, 1, 2, false}}
	for i, w := range want {
		c := r[i]
		if c.Seq != i || c.Dir != w.dir || c.Rows != w.rows || c.Cols != w.cols || c.Q8 != w.q8 || c.Weight != "w" {
			t.Fatalf("crossing %d: %+v", i, c)
		}
	}
	// The q8_0 payload is recorded as the values it encodes.
	if r[2].Data[3] != 1.5 || r[0].Data[3] != 1.5 || r[3].Data[1] != 1 {
		t.Fatalf("recorded values %v %v %v", r[0].Data[3], r[2].Data[3], r[3].Data[1])
	}
	if err := spy.MatMul("matmul", "never", x, 1, y); err == nil || !strings.Contains(err.Error(), "never uploaded") {
		t.Fatalf("matmul on an unknown weight: %v", err)
	}
}

// TestWeightName: an uploaded name's format prefix is dropped; a model's
// own name is left as it is.
func TestWeightName(t *testing.T) {
	for in, want := range map[string]string{
		"model.layers.3.self_attn.q_proj":         "model.layers.3.self_attn.q_proj",
		"bf16:model.layers.3.self_attn.q_proj":    "model.layers.3.self_attn.q_proj",
		"bf16dot:model.layers.3.self_attn.q_proj": "model.layers.3.self_attn.q_proj",
		"q4_k:lm_head.weight":                     "lm_head.weight",
	} {
		if got := WeightName(in); got != want {
			t.Errorf("WeightName(%q) = %q, want %q", in, got, want)
		}
	}
}
