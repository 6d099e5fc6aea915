package plan_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gelo/attest"
	"gelo/formats"
	"gelo/ir"
	"gelo/models"
	"gelo/passes"
	"gelo/plan"
	"gelo/plan/planfile"
)

func tiny(t *testing.T) (models.Source, *models.Config) {
	t.Helper()
	src, cfg, err := models.Resolve(models.DefaultVariant, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	return src, cfg
}

// TestCompileDeterministic: two compiles of the same inputs print the same
// bytes, and Compile is exactly trace + the pipeline the options select
// (with the source recorded in meta).
func TestCompileDeterministic(t *testing.T) {
	src, cfg := tiny(t)
	for _, o := range []plan.Options{plan.Defaults(), withMask("haar"), withMask("none"), {ProtectOptions: passes.DefaultProtect(), NoFuse: []string{"all"}}} {
		a, err := plan.Compile(src, cfg, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := plan.Compile(src, cfg, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ir.Print(a) != ir.Print(b) {
			t.Fatalf("mask %s: two compiles print different IR", o.Mask)
		}
		m, err := models.Trace(cfg, models.TraceOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m.Meta["model"], m.Meta["seed"] = src.Spec, "1"
		if err := passes.Pipeline(o.ProtectOptions, o.FusionsOff()...).Run(m); err != nil {
			t.Fatal(err)
		}
		if ir.Print(m) != ir.Print(a) {
			t.Fatalf("mask %s: Compile differs from trace + pipeline", o.Mask)
		}
	}
}

func withMask(mask string) plan.Options {
	o := plan.Knobs()
	o.Mask = mask
	return o
}

func TestCompileDumps(t *testing.T) {
	src, cfg := tiny(t)
	var got []string
	d := &plan.Dump{After: []string{"trace", "protect"}, To: func(pass string, m *ir.Module) error {
		got = append(got, pass)
		return nil
	}}
	if _, err := plan.Compile(src, cfg, plan.Defaults(), d); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "trace,protect" {
		t.Fatalf("dumped after %v, want trace and protect", got)
	}
	d.After = []string{"nosuchpass"}
	if _, err := plan.Compile(src, cfg, plan.Defaults(), d); err == nil || !strings.Contains(err.Error(), "--dump-after=nosuchpass: no such pass") {
		t.Fatalf("a typo in a dump name: %v", err)
	}
}

func TestOptionsCheck(t *testing.T) {
	for _, tc := range []struct {
		edit func(*plan.Options)
		want string
	}{
		{func(o *plan.Options) { o.Mask = "rot13" }, `--mask "rot13"`},
		{func(o *plan.Options) { o.Cadence = "hourly" }, `--cadence "hourly"`},
		{func(o *plan.Options) { o.ShieldK = 4 }, "at least 8"},
		{func(o *plan.Options) { o.Weights = "q3_k" }, `--weights "q3_k"`},
		{func(o *plan.Options) { o.NoFuse = []string{"bogus"} }, "--no-fuse=bogus: no such fusion"},
	} {
		o := plan.Knobs()
		tc.edit(&o)
		err := o.Check()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Check: %v, want %q", err, tc.want)
		}
		src, cfg := tiny(t)
		if _, err := plan.Compile(src, cfg, o, nil); err == nil {
			t.Errorf("Compile accepted options Check refuses (%s)", tc.want)
		}
	}
	if err := plan.Defaults().Check(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"8;4", "-1,1", "8,-1", "8,NaN", "8,Inf", "8,-Inf", "8", ",4"} {
		if k, e, err := plan.ParseShield(bad); err == nil {
			t.Errorf("ParseShield accepted %q (K %d, energy %v)", bad, k, e)
		}
	}
	if k, e, err := plan.ParseShield("0,0"); err != nil || k != 0 || e != 0 {
		t.Errorf("ParseShield(0,0) = %d, %v, %v", k, e, err)
	}
	if k, e, err := plan.ParseShield("16, 2.5"); err != nil || k != 16 || e != 2.5 {
		t.Errorf("ParseShield(16, 2.5) = %d, %v, %v", k, e, err)
	}
}

// seal compiles and seals a model with o and returns the encoded plan.
func seal(t *testing.T, model *models.Model, o plan.Options, tok string) (*planfile.Plan, attest.Identity, []byte) {
	t.Helper()
	m, err := plan.Compile(model.Source, model.Config, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, id, err := plan.Seal(m, model, o, tok)
	if err != nil {
		t.Fatal(err)
	}
	data, err := plan.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, id, data
}

func TestSealOpenVariant(t *testing.T) {
	model, err := models.Open(models.DefaultVariant, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	p, id, data := seal(t, model, plan.Defaults(), "")
	if _, _, again := seal(t, model, plan.Defaults(), ""); !bytes.Equal(data, again) {
		t.Fatal("two seals of the same inputs give different plan files")
	}
	if p.Source.Kind != planfile.SourceVariant || p.Source.SynthDType != models.SynthDType || p.Source.Seed != 1 {
		t.Fatalf("source %+v", p.Source)
	}
	dec, err := planfile.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	got, gotID, err := plan.OpenSealed("a.gelo", dec, plan.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	got.Close()
	if gotID.Digest != id.Digest {
		t.Fatalf("reopened identity %s, sealed %s", gotID.Digest, id.Digest)
	}

	// Another seed is another model.
	seed := uint64(2)
	if _, _, err := plan.OpenSealed("a.gelo", dec, plan.Overrides{Seed: &seed}); err == nil ||
		!strings.Contains(err.Error(), "weights differ") || !strings.Contains(err.Error(), "seed 2 (bf16)") {
		t.Fatalf("seed 2 against a seed-1 plan: %v", err)
	}
	// A forged backend breaks the identity's numerics flags.
	forged := *dec
	forged.Backend = "gomlx"
	if _, _, err := plan.OpenSealed("f.gelo", &forged, plan.Overrides{}); err == nil || !strings.Contains(err.Error(), `backend "gomlx"`) {
		t.Fatalf("backend gomlx: %v", err)
	}
	if _, err := plan.Identity("f.gelo", &forged); err == nil || !strings.Contains(err.Error(), `numerics flag "backend"`) {
		t.Fatalf("identity of a plan whose backend changed: %v", err)
	}
	// A config section edited (one value, so it still parses) is not the
	// config the identity binds.
	forged = *dec
	cfg := *model.Config
	cfg.RMSNormEps = 1e-5
	forged.Config = cfg.JSON()
	if _, err := plan.Identity("f.gelo", &forged); err == nil || !strings.Contains(err.Error(), "the config section hashes to") {
		t.Fatalf("identity of a plan whose config section changed: %v", err)
	}
	// A self-consistent change outside the identity: the weights are not the sealed ones.
	forged = *dec
	forged.Source.SynthDType = "f32"
	if _, _, err := plan.OpenSealed("f.gelo", &forged, plan.Overrides{}); err == nil || !strings.Contains(err.Error(), "seed 1 (f32)") {
		t.Fatalf("synth dtype f32: %v", err)
	}
}

// TestIdentityBindsOptions: every compile option that changes numerics
// changes the identity digest (so it is attested), and the engine choice
// does not (it is not a compile option).
func TestIdentityBindsOptions(t *testing.T) {
	model, err := models.Open(models.DefaultVariant, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	_, base, _ := seal(t, model, plan.Defaults(), "")
	for name, edit := range map[string]func(*plan.Options){
		"mask":     func(o *plan.Options) { o.Mask = passes.MaskHaar },
		"cadence":  func(o *plan.Options) { o.Cadence = passes.PerOffload },
		"shield k": func(o *plan.Options) { o.ShieldK = 16 },
		"energy":   func(o *plan.Options) { o.ShieldEnergy = 2 },
		"center":   func(o *plan.Options) { o.Center = false },
		"topology": func(o *plan.Options) { o.Topology = passes.Shared },
		"weights":  func(o *plan.Options) { o.Weights = formats.Q8_0 },
		"no-fuse":  func(o *plan.Options) { o.NoFuse = []string{"swiglu"} },
	} {
		o := plan.Knobs()
		edit(&o)
		_, id, _ := seal(t, model, o, "")
		if id.Digest == base.Digest {
			t.Errorf("option %s does not change the model identity", name)
		}
	}
}

// TestOpenSealedDirectory: a plan compiled from a model directory opens from
// it, and is refused once the weight file is swapped for another seed's,
// the config changes, or the tokenizer changes or goes missing; each
// refusal names the file that differs.
func TestOpenSealedDirectory(t *testing.T) {
	dir := t.TempDir()
	cfg, _ := models.Variant(models.DefaultVariant)
	m1, m2 := filepath.Join(dir, "m1"), filepath.Join(dir, "m2")
	if err := models.WriteSynthetic(m1, cfg, 1, "bf16", nil); err != nil {
		t.Fatal(err)
	}
	if err := models.WriteSynthetic(m2, cfg, 2, "bf16", nil); err != nil {
		t.Fatal(err)
	}
	tok := filepath.Join(dir, "tokenizer.json")
	if err := os.WriteFile(tok, tinyTokenizer(true), 0o644); err != nil {
		t.Fatal(err)
	}
	model, err := models.Open(m1, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, id, _ := seal(t, model, plan.Defaults(), tok)
	model.Close()
	if p.Source.Kind != planfile.SourceDir || p.Source.Name != m1 || p.Source.Tokenizer != tok {
		t.Fatalf("source %+v", p.Source)
	}
	var progressed bool
	open := func(ov plan.Overrides) error {
		ov.Progress = func(spec string, done, total int64) { progressed = true }
		got, gotID, err := plan.OpenSealed("m1.gelo", p, ov)
		if err == nil {
			got.Close()
			if gotID.Digest != id.Digest {
				t.Fatalf("opened identity %s, sealed %s", gotID.Digest, id.Digest)
			}
		}
		return err
	}
	refused := func(err error, wants ...string) {
		t.Helper()
		if err == nil {
			t.Fatalf("accepted; want a refusal naming %q", wants)
		}
		var me *attest.MismatchError
		if !errors.As(err, &me) {
			t.Errorf("refusal does not wrap the identity mismatch: %v", err)
		}
		for _, w := range append(wants, "refusing to run sealed plan m1.gelo") {
			if !strings.Contains(err.Error(), w) {
				t.Fatalf("refusal %q does not say %q", err, w)
			}
		}
	}
	if err := open(plan.Overrides{}); err != nil {
		t.Fatal(err)
	}
	if !progressed {
		t.Error("no progress reported while loading a directory")
	}

	// Another seed's weights, through the model override.
	refused(open(plan.Overrides{Model: m2, Tokenizer: tok}), "weights differ: tensor model.embed_tokens.weight: data differs",
		filepath.Join(m2, "model.safetensors"))

	// The weight file swapped in place.
	st := filepath.Join(m1, "model.safetensors")
	orig, _ := os.ReadFile(st)
	other, _ := os.ReadFile(filepath.Join(m2, "model.safetensors"))
	os.WriteFile(st, other, 0o644)
	refused(open(plan.Overrides{}), "weights: "+st, "weights differ: tensor model.embed_tokens.weight: data differs")
	os.WriteFile(st, orig, 0o644)

	// One config value changed (same shapes, so the weights still load).
	cfgPath := filepath.Join(m1, "config.json")
	origCfg, _ := os.ReadFile(cfgPath)
	changed := *cfg
	changed.RMSNormEps = 1e-5
	os.WriteFile(cfgPath, changed.JSON(), 0o644)
	err = open(plan.Overrides{})
	refused(err, "config: "+cfgPath, "config.json differs")
	if strings.Contains(err.Error(), "weights differ") {
		t.Errorf("a config change is reported as a weights change: %v", err)
	}
	os.WriteFile(cfgPath, origCfg, 0o644)

	// The tokenizer changed, or missing.
	os.WriteFile(tok, tinyTokenizer(false), 0o644)
	refused(open(plan.Overrides{}), "tokenizer: "+tok, "tokenizer differs")
	// Not a tokenizer at all: refused before it is hashed, naming the file.
	os.WriteFile(tok, []byte(`{"model":{"type":"WordPiece"}}`), 0o644)
	if err := open(plan.Overrides{}); err == nil || !strings.Contains(err.Error(), tok+" is not a usable tokenizer") {
		t.Fatalf("a tokenizer that does not parse: %v", err)
	}
	os.Remove(tok)
	if err := open(plan.Overrides{}); err == nil || !strings.Contains(err.Error(), tok) {
		t.Fatalf("missing tokenizer: %v", err)
	}

	// Restored: opens again.
	os.WriteFile(tok, tinyTokenizer(true), 0o644)
	if err := open(plan.Overrides{}); err != nil {
		t.Fatal(err)
	}
}

func TestReadArtifact(t *testing.T) {
	dir := t.TempDir()
	src, cfg := tiny(t)
	m, err := plan.Compile(src, cfg, plan.Defaults(), nil)
	if err != nil {
		t.Fatal(err)
	}
	irPath := filepath.Join(dir, "a.ir")
	os.WriteFile(irPath, []byte(ir.Print(m)), 0o644)
	got, p, err := plan.ReadArtifact(irPath)
	if err != nil || p != nil || ir.Print(got) != ir.Print(m) {
		t.Fatalf("IR text: plan %v, err %v", p, err)
	}
	if _, _, err := plan.ReadSealed(irPath); err == nil || !strings.Contains(err.Error(), "not a sealed plan file") {
		t.Fatalf("ReadSealed of IR text: %v", err)
	}
	bad := filepath.Join(dir, "b.gelo")
	os.WriteFile(bad, []byte("GELOPLAN and then nothing"), 0o644)
	if _, _, err := plan.ReadArtifact(bad); err == nil || !strings.Contains(err.Error(), "plan file "+bad) {
		t.Fatalf("a broken plan file: %v", err)
	}
}

// tinyTokenizer is the smallest tokenizer.json the loader accepts: "ab" is
// one token (id 2) with the merge, two (0 1) without it.
func tinyTokenizer(merge bool) []byte {
	vocab, merges := `{"a":0,"b":1}`, `[]`
	if merge {
		vocab, merges = `{"a":0,"b":1,"ab":2}`, `[["a","b"]]`
	}
	return []byte(`{"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"use_regex":false},"decoder":{"type":"ByteLevel"},` +
		`"model":{"type":"BPE","vocab":` + vocab + `,"merges":` + merges + `}}`)
}

// TestTokenizerBinding: a tokenizer path is that file (not its
// directory's tokenizer.json), a file that is not a tokenizer is never
// sealed, and a sealed plan returns the tokenizer parsed from the bytes its
// identity hashed.
func TestTokenizerBinding(t *testing.T) {
	dir := t.TempDir()
	def, other := filepath.Join(dir, "tokenizer.json"), filepath.Join(dir, "other.json")
	os.WriteFile(def, tinyTokenizer(false), 0o644)
	os.WriteFile(other, tinyTokenizer(true), 0o644)
	tk, err := plan.LoadTokenizer(other, "")
	if err != nil {
		t.Fatal(err)
	}
	if tk.Path != other || !bytes.Equal(tk.Bytes, tinyTokenizer(true)) || len(tk.Tok.Encode("ab")) != 1 {
		t.Fatalf("LoadTokenizer(%s) loaded %s (%d tokens for ab)", other, tk.Path, len(tk.Tok.Encode("ab")))
	}
	if tk, err = plan.LoadTokenizer(dir, ""); err != nil || tk.Path != def || len(tk.Tok.Encode("ab")) != 2 {
		t.Fatalf("LoadTokenizer(dir) = %s, %v", tk.Path, err)
	}
	if tk, err = plan.LoadTokenizer("", t.TempDir()); err != nil || tk.Tok != nil || tk.Bytes != nil {
		t.Fatalf("no tokenizer: %+v, %v", tk, err)
	}
	if _, err := plan.LoadTokenizer(filepath.Join(dir, "missing.json"), ""); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Fatalf("missing file: %v", err)
	}

	model, err := models.Open(models.DefaultVariant, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	m, err := plan.Compile(model.Source, model.Config, plan.Defaults(), nil)
	if err != nil {
		t.Fatal(err)
	}
	bogus := filepath.Join(dir, "passwd")
	os.WriteFile(bogus, []byte("root:x:0:0:root:/root:/bin/bash\n"), 0o644)
	if _, _, err := plan.Seal(m, model, plan.Defaults(), bogus); err == nil || !strings.Contains(err.Error(), bogus+" is not a usable tokenizer") {
		t.Fatalf("Seal with a non-tokenizer: %v", err)
	}
	p, id, err := plan.Seal(m, model, plan.Defaults(), other)
	if err != nil {
		t.Fatal(err)
	}
	if p.Source.Tokenizer != other {
		t.Fatalf("sealed tokenizer path %s, want %s", p.Source.Tokenizer, other)
	}
	o, err := plan.OpenSealedTokenizer("t.gelo", p, plan.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	o.Model.Close()
	if o.Identity.Digest != id.Digest || o.Tokenizer.Path != other || len(o.Tokenizer.Tok.Encode("ab")) != 1 {
		t.Fatalf("opened with tokenizer %s (%d tokens for ab)", o.Tokenizer.Path, len(o.Tokenizer.Tok.Encode("ab")))
	}
}
