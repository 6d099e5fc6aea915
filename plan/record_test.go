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

// TestRecordBatched: a batched recording (two groups of two prompts on one
// batch of two slots, the last group smaller) generates each prompt's own
// greedy tokens, as one prompt at a time does; each decode pass carries
// one row per sequence of its group, its truth one token per sequence; a
// slot's next prompt starts from a zeroised cache (the tokens agree); and
// passes are numbered once across groups (the mask stream never repeats,
// or the backend would refuse).
func TestRecordBatched(t *testing.T) {
	prompts := [][]int32{{5, 17, 300, 42, 9}, {401, 402, 7}, {8, 9, 10, 11, 12, 13, 14}}
	key := []byte("gelo record test key 0123456789ab")
	for _, level := range []string{passes.LevelNone, passes.LevelExact} {
		m, w := compiledTiny(t, level, "", 0, true)
		run := func(batch int) (*record.Recording, []record.PassTruth) {
			r, truth, err := plan.Record(m, w, plan.EngineOptions{}, key, prompts,
				plan.RecordOptions{MaxTokens: 4, MaxContext: 32, Batch: batch})
			if err != nil {
				t.Fatalf("%s, batch %d: %v", level, batch, err)
			}
			return r, truth
		}
		_, single := run(1)
		rec, batched := run(2)
		// Each prompt's generated tokens: the decode passes' fed tokens.
		gen := func(truth []record.PassTruth) map[int][]int32 {
			out := map[int][]int32{}
			for _, p := range truth {
				if p.Phase != models.PhaseDecode {
					continue
				}
				for i, tok := range p.Tokens {
					out[p.Prompt+i] = append(out[p.Prompt+i], tok)
				}
			}
			return out
		}
		want, got := gen(single), gen(batched)
		for p := range prompts {
			if !slices.Equal(want[p], got[p]) || len(want[p]) != 3 {
				t.Errorf("%s: prompt %d: batched generation fed %v, one at a time %v", level, p, got[p], want[p])
			}
		}
		// 3 prefills + 3 decodes of group {0, 1} + 3 decodes of group {2}.
		if len(batched) != 9 {
			t.Fatalf("%s: %d passes, want 9", level, len(batched))
		}
		rows := map[int]int{}
		for _, c := range rec.Crossings {
			if c.Dir == device.ToDevice && c.Index == 0 {
				rows[c.Pass] = c.Rows
			}
		}
		for _, p := range batched {
			if p.Phase == models.PhaseDecode && level == passes.LevelNone && rows[p.Pass] != len(p.Tokens) {
				t.Errorf("none: decode pass %d carries %d rows for %d sequences", p.Pass, rows[p.Pass], len(p.Tokens))
			}
		}
		if rec.Header["gelo.batch"] != "2" {
			t.Errorf("%s: header batch %q, want 2", level, rec.Header["gelo.batch"])
		}
	}
}
