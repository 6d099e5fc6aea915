package plan_test

import (
	"testing"

	"gelo/models"
	"gelo/plan"
)

// TestEOS: the config's ids, then the tokenizer's where the config lacks
// it, without touching the config.
func TestEOS(t *testing.T) {
	cfg := &models.Config{EOSTokenIDs: models.TokenIDs{7}}
	got := plan.EOS(cfg, nil)
	if len(got) != 1 || got[0] != 7 {
		t.Fatalf("EOS without a tokenizer = %v", got)
	}
	got[0] = 9
	if cfg.EOSTokenIDs[0] != 7 {
		t.Error("EOS returned the config's own slice")
	}
}
