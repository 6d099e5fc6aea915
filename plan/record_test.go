package plan_test

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gelo/device"
	"gelo/device/record"
	"gelo/models"
	"gelo/passes"
	"gelo/plan"
)

func cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	if aa == 0 || bb == 0 {
		return 0
	}
	return ab / math.Sqrt(aa*bb)
}

// TestRecordHoldsNoPlaintext: a recording of a protected run, written and
// read back, has no row close to any token's dictionary row (the layer-0
// row of every token the run fed) or to any plaintext row of the same run
// (the payloads of the unprotected run of the same prompts, crossing by
// crossing), and its metadata names no token. That is what a scan for
// plaintext can see; the attack harness is what shows that the row space
// still gives every token away.
func TestRecordHoldsNoPlaintext(t *testing.T) {
	// The 0.6B widths (d = 1024), one layer, a small vocabulary: at
	// qwen3-tiny's width of 64 a mixed row of 16 sits at |cos| ~ 0.5 from its
	// data row by chance alone.
	cfg, err := models.Variant("qwen3-0.6b")
	if err != nil {
		t.Fatal(err)
	}
	cfg.NumHiddenLayers, cfg.VocabSize = 1, 1024
	cfg.BOSTokenID, cfg.EOSTokenIDs = 1, models.TokenIDs{2}
	w, err := models.SynthesizeAs(cfg, 3, "bf16")
	if err != nil {
		t.Fatal(err)
	}
	model := &models.Model{Source: models.Source{Spec: "qwen3-0.6b-1layer", Variant: "qwen3-0.6b", Seed: 3, SynthDType: "bf16"}, Weights: w}
	defer model.Close()
	prompts := [][]int32{{5, 17, 300, 42, 9, 77, 128, 256, 3, 11}, {401, 402, 7}}
	sessionKey := []byte("gelo record test key 0123456789ab")
	rec := func(o plan.Options) (*record.Recording, []record.PassTruth) {
		m, err := plan.Compile(model.Source, model.Config, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		hdr, err := plan.RecordHeader(m, model, o)
		if err != nil {
			t.Fatal(err)
		}
		r, truth, err := plan.Record(m, model.Weights, plan.EngineOptions{}, sessionKey, prompts, plan.RecordOptions{MaxTokens: 4, MaxContext: 64, Header: hdr})
		if err != nil {
			t.Fatal(err)
		}
		return r, truth
	}
	plainOpt := plan.Knobs()
	plainOpt.Mask = passes.MaskNone
	plainRec, _ := rec(plainOpt)
	protRec, truth := rec(plan.Knobs())
	if len(truth) != 2*4 {
		t.Fatalf("%d passes recorded, want 8 (a prefill and 3 decodes per prompt)", len(truth))
	}
	path := filepath.Join(t.TempDir(), "r.safetensors")
	if err := record.Write(path, protRec); err != nil {
		t.Fatal(err)
	}
	got, err := record.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Crossings) != len(protRec.Crossings) || got.Header[record.KeyIdentity] == "" || !strings.Contains(got.Header["gelo.insecure"], "row space") {
		t.Fatalf("read back %d crossings (wrote %d), header %v", len(got.Crossings), len(protRec.Crossings), got.Header)
	}

	// The dictionary rows of every token fed: RMSNorm(e_t) * gamma, up to scale
	// e_t * gamma.
	embed, _, _ := model.Get("model.embed_tokens.weight")
	gamma, _, _ := model.Get("model.layers.0.input_layernorm.weight")
	d := model.Config.HiddenSize
	var dict [][]float32
	for _, p := range truth {
		for _, tok := range p.Tokens {
			row := make([]float32, d)
			for j := range row {
				row[j] = embed[int(tok)*d+j] * gamma[j]
			}
			dict = append(dict, row)
		}
	}
	// The plaintext rows of the same run: the unprotected payloads, by pass
	// and crossing op/weight/direction.
	type key struct {
		pass  int
		op, w string
		dir   device.Direction
	}
	plainRows := map[key][][]float32{}
	for _, c := range plainRec.Crossings {
		k := key{c.Pass, c.Op, c.Weight, c.Dir}
		for i := range c.Rows {
			plainRows[k] = append(plainRows[k], c.Data[i*c.Cols:(i+1)*c.Cols])
		}
	}
	var worst float64
	checked := 0
	for _, c := range got.Crossings {
		refs := plainRows[key{c.Pass, c.Op, c.Weight, c.Dir}]
		if len(refs) == 0 {
			t.Fatalf("crossing %d (%s %s %s) has no plaintext counterpart", c.Seq, c.Op, c.Weight, c.Dir)
		}
		if c.Dir == device.ToDevice && c.Cols == d {
			refs = append(slices.Clone(refs), dict...)
		}
		for i := range c.Rows {
			row := c.Data[i*c.Cols : (i+1)*c.Cols]
			for _, ref := range refs {
				if len(ref) != len(row) {
					continue
				}
				worst = max(worst, math.Abs(cosine(row, ref)))
				checked++
			}
		}
	}
	if worst > 0.5 {
		t.Fatalf("a recorded row has |cos| %.3f with a plaintext or dictionary row", worst)
	}
	if checked == 0 {
		t.Fatal("nothing was compared")
	}
	t.Logf("%d row pairs checked; the largest |cos| with a plaintext or dictionary row is %.3f", checked, worst)
}
