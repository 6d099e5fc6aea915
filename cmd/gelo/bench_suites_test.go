package main

import (
	"errors"
	"testing"

	"gelo/models"
	"gelo/passes"
)

// TestBenchSuitesCompileTheFlagsWeights: the suites that compile their own
// plans (fusion, replay, batch, ...) take --weights and --kv-dtype from the
// command line, as the masks suite does; before, they compiled f32 weights
// and an f32 cache whatever the flags said. A suite that names its format
// (the weights suite) keeps it.
func TestBenchSuitesCompileTheFlagsWeights(t *testing.T) {
	cfg, err := models.Variant("qwen3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	e := &benchEnv{mf: &modelFlags{weights: passes.WeightsQ8_0, kvDType: "f16"}, l: &models.Model{Weights: &models.Weights{Config: cfg}}}
	m, err := e.module(protectWith(passes.MaskNone), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Meta["weights"]; got != passes.WeightsQ8_0 {
		t.Errorf("weights %q, want the flag's %q", got, passes.WeightsQ8_0)
	}
	if got := m.Meta["kv_dtype"]; got != "f16" {
		t.Errorf("kv_dtype %q, want the flag's f16", got)
	}
	po := protectWith(passes.MaskNone)
	po.Weights = passes.WeightsQ4_0
	if m, err = e.module(po, nil); err != nil {
		t.Fatal(err)
	}
	if got := m.Meta["weights"]; got != passes.WeightsQ4_0 {
		t.Errorf("a suite's own format: weights %q, want %q", got, passes.WeightsQ4_0)
	}
	e.mf.kvDType = "f8"
	if _, err := e.module(po, nil); !errors.Is(err, errUsage) {
		t.Errorf("--kv-dtype f8: err %v, want a usage error", err)
	}
}
