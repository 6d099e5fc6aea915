package plan_test

import (
	"testing"

	"gelo/formats"
	"gelo/ir"
	"gelo/models"
	"gelo/passes"
	"gelo/plan"
	"gelo/runtime"
)

// TestReadMatVecWeights: the bare read a benchmark times beside the decode
// steps covers the weights of every one-row TEE matmul of the decode
// graph, each buffer once (the stacked q/k/v and gate/up too, however many
// KV buckets compiled a program), and no other bytes: the count it returns
// is their bytes, less each buffer's remainder past whole 256-byte runs a
// worker.
func TestReadMatVecWeights(t *testing.T) {
	const workers = 2
	for _, w := range formats.PlanNames() {
		m, wts := compiledTiny(t, passes.LevelExact, w, passes.DefaultVerify, false)
		eng, err := plan.NewEngine(plan.EngineOptions{Workers: workers}, wts, make([]byte, 32), m)
		if err != nil {
			t.Fatalf("%s: %v", w, err)
		}
		s, err := runtime.NewSession(m, eng.Runtime, runtime.Options{MaxContext: 80})
		if err != nil {
			eng.Close()
			t.Fatalf("%s: %v", w, err)
		}
		if _, err := s.Prefill([]int32{3, 1, 4}); err != nil {
			t.Fatalf("%s prefill: %v", w, err)
		}
		for i := 0; i < 40; i++ { // past the first KV bucket: a second decode program
			if _, err := s.Decode(int32(i % 7)); err != nil {
				t.Fatalf("%s decode: %v", w, err)
			}
		}
		want, all, bufs := 0, 0, 0
		seen := map[ir.ValueID]bool{}
		g := m.Graph(models.PhaseDecode)
		if g == nil {
			t.Fatalf("%s: no decode graph", w)
		}
		for _, n := range g.Nodes {
			if (n.Op != ir.OpMatMul && n.Op != ir.OpLMHead) || n.Place == ir.Device {
				continue
			}
			wv := ir.Storage(g, n.Inputs[1])
			if seen[wv] {
				continue
			}
			seen[wv] = true
			wn := g.Node(n.Inputs[1])
			// (int8 rows are read with their scales: MatrixBytes.)
			b := wn.Type.DType.MatrixBytes(wn.Type.Shape[0].Size, wn.Type.Shape[1].Size)
			want += b / (256 * workers) * (256 * workers) // whole 256-byte runs a worker
			all += b
			bufs++
		}
		got, d := eng.CPU.ReadMatVecWeights(models.PhaseDecode)
		eng.Close()
		if bufs == 0 || got != want || d <= 0 {
			t.Errorf("%s: read %d bytes in %v, want %d of the %d bytes of %d matmul weights", w, got, d, want, all, bufs)
		}
		t.Logf("%s: %d of %d bytes, %d buffers", w, got, all, bufs)
	}
}

// TestReadMatVecWeightsDecodeOnly: a protected prefill has one-row TEE
// products too (the mean row of each centred crossing), which a decode
// step never streams: the decode's bare read leaves them out, and a plan
// that offloads every decode matmul reads nothing.
func TestReadMatVecWeightsDecodeOnly(t *testing.T) {
	m, wts := compiledTiny(t, passes.Level8x4, formats.F32, passes.DefaultVerify, true)
	eng, err := plan.NewEngine(plan.EngineOptions{Workers: 2}, wts, make([]byte, 32), m)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	s, err := runtime.NewSession(m, eng.Runtime, runtime.Options{MaxContext: 80})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prefill([]int32{3, 1, 4, 1, 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Decode(2); err != nil {
		t.Fatal(err)
	}
	if n, _ := eng.CPU.ReadMatVecWeights(models.PhaseDecode); n != 0 {
		t.Errorf("decode: read %d bytes of a plan whose decode matmuls are all the device's", n)
	}
	if n, _ := eng.CPU.ReadMatVecWeights(models.PhasePrefill); n == 0 {
		t.Errorf("prefill: read nothing; its centred crossings' mean rows are one-row TEE products")
	}
}
