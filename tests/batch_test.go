package tests

import (
	"math"
	"testing"

	"gelo/device"
	"gelo/lower/cpu"
	"gelo/models"
	"gelo/passes"
	"gelo/runtime"
)

func newBatch(t testing.TB, cfg *models.Config, w *models.Weights, po passes.ProtectOptions, b, maxCtx int) *runtime.Batch {
	t.Helper()
	m := compileModule(t, cfg, models.TraceOptions{}, po)
	be := cpu.New(w, cpu.Options{SessionKey: testKey})
	t.Cleanup(be.Close)
	bt, err := runtime.NewBatch(m, runtime.Adapt(be.Name(), be.Compile), b, runtime.Options{MaxContext: maxCtx})
	if err != nil {
		t.Fatal(err)
	}
	return bt
}

// TestBatchedMatchesSerial decodes four prompts of different lengths
// together and one at a time. Unprotected, every step's logits are
// bit-identical (each matmul row is computed in an order independent of
// the row count, attention is per row); protected, the tokens are equal
// and the logits within the mask tolerance.
func TestBatchedMatchesSerial(t *testing.T) {
	cfg, _ := models.Variant("qwen3-tiny")
	w, _ := models.SynthesizeAs(cfg, 9, "bf16")
	prompts := [][]int32{testPrompt(3, cfg.VocabSize), testPrompt(11, cfg.VocabSize)[4:], testPrompt(7, cfg.VocabSize), {42}}
	shared := passes.DefaultProtect()
	shared.Topology = passes.Shared
	for _, po := range []passes.ProtectOptions{plain, passes.DefaultProtect(), shared} {
		t.Run(po.Mask+"/"+po.Topology, func(t *testing.T) {
			const steps = 24
			bt := newBatch(t, cfg, w, po, len(prompts), 64)
			got, err := bt.Generate(prompts, runtime.GenerateOptions{MaxTokens: steps}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range prompts {
				s := newSessionOpts(t, compileModule(t, cfg, models.TraceOptions{}, po), w, testKey, runtime.Options{MaxContext: 64})
				want, err := s.Generate(p, runtime.GenerateOptions{MaxTokens: steps})
				if err != nil {
					t.Fatal(err)
				}
				if len(got[i]) != len(want) {
					t.Fatalf("sequence %d: %d tokens batched, %d serial", i, len(got[i]), len(want))
				}
				for j := range want {
					if got[i][j] != want[j] {
						t.Fatalf("sequence %d token %d: batched %d, serial %d", i, j, got[i][j], want[j])
					}
				}
			}
		})
	}
}

func TestBatchedLogitsBitIdenticalUnprotected(t *testing.T) {
	cfg, _ := models.Variant("qwen3-tiny")
	w, _ := models.SynthesizeAs(cfg, 9, "bf16")
	prompts := [][]int32{testPrompt(5, cfg.VocabSize), {7, 8}}
	bt := newBatch(t, cfg, w, plain, 2, 32)
	var serial [][]float32
	for _, p := range prompts {
		s := newSessionOpts(t, compileModule(t, cfg, models.TraceOptions{}, plain), w, testKey, runtime.Options{MaxContext: 32})
		if _, err := s.Prefill(p); err != nil {
			t.Fatal(err)
		}
		l, err := s.Decode(99)
		if err != nil {
			t.Fatal(err)
		}
		serial = append(serial, append([]float32(nil), l...))
	}
	for i, p := range prompts {
		if _, err := bt.Prefill(i, p); err != nil {
			t.Fatal(err)
		}
	}
	got, err := bt.Decode([]int32{99, 99})
	if err != nil {
		t.Fatal(err)
	}
	v := cfg.VocabSize
	for i := range prompts {
		for j := 0; j < v; j++ {
			if math.Float32bits(got[i*v+j]) != math.Float32bits(serial[i][j]) {
				t.Fatalf("sequence %d logit %d: batched %v, serial %v", i, j, got[i*v+j], serial[i][j])
			}
		}
	}
}

// TestPerSequenceTopologyKeepsSequencesApart: under the default topology
// each decode crossing carries B blocks of 16 rows (1 data + 15 shield),
// each masked on its own; under shared, one block of next_pow2(B+8) rows.
func TestPerSequenceTopologyKeepsSequencesApart(t *testing.T) {
	cfg, _ := models.Variant("qwen3-tiny")
	w, _ := models.SynthesizeAs(cfg, 9, "bf16")
	shared := passes.DefaultProtect()
	shared.Topology = passes.Shared
	for _, tc := range []struct {
		po   passes.ProtectOptions
		rows int
	}{{passes.DefaultProtect(), 3 * 16}, {shared, 16}} {
		m := compileModule(t, cfg, models.TraceOptions{}, tc.po)
		be0 := cpu.New(w, cpu.Options{})
		spy := device.NewSpy(cpu.NewLocalDevice(be0.Kernels()))
		be := cpu.New(w, cpu.Options{Device: spy, SessionKey: testKey})
		bt, err := runtime.NewBatch(m, runtime.Adapt(be.Name(), be.Compile), 3, runtime.Options{MaxContext: 16})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			if _, err := bt.Prefill(i, []int32{int32(i + 1)}); err != nil {
				t.Fatal(err)
			}
		}
		mark := spy.Len()
		if _, err := bt.Decode([]int32{4, 5, 6}); err != nil {
			t.Fatal(err)
		}
		for _, c := range spy.Record()[mark:] {
			if c.Rows != tc.rows {
				t.Errorf("%s: decode crossing of %s carries %d rows, want %d", tc.po.Topology, c.Op, c.Rows, tc.rows)
			}
		}
		be.Close()
		be0.Close()
	}
}
