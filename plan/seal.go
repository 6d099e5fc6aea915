package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unsafe"

	"gelo/attest"
	"gelo/ir"
	"gelo/models"
	"gelo/passes"
	"gelo/plan/planfile"
)

const (
	// Backend is what a plan compiled by this build is lowered for and the
	// only backend OpenSealed runs.
	Backend = "cpu"
	// tensorDType is how tensors enter the identity: the f32 values the
	// runtime loads (a quantized plan derives its device weights from them;
	// the "weights" flag says how).
	tensorDType = "F32"
	// TokenizerFileName is the file a tokenizer directory holds.
	TokenizerFileName = "tokenizer.json"
)

// TensorDType is the dtype tensors are hashed as in the identity.
func TensorDType() string { return tensorDType }

// IsPlanName reports whether a file name asks for a plan file.
func IsPlanName(path string) bool { return strings.HasSuffix(path, planfile.Ext) }

// Seal builds the plan file of m, compiled with opt from model: its
// source, config bytes, pass configuration, the IR, and the model identity
// recomputed from the weights (hashed, not copied), the tokenizer
// (tokenizer: a file, used as named, or a directory holding
// tokenizer.json; "" means the model directory's, if any; it must parse as
// a tokenizer) and the numerics flags.
func Seal(m *ir.Module, model *models.Model, opt Options, tokenizer string) (*planfile.Plan, attest.Identity, error) {
	tok, err := ModelTokenizer(tokenizer, model)
	if err != nil {
		return nil, attest.Identity{}, err
	}
	return SealTokenizer(m, model, opt, tok)
}

// SealTokenizer is Seal with the tokenizer loaded already (ModelTokenizer):
// a server seals the one it encodes with, read once.
func SealTokenizer(m *ir.Module, model *models.Model, opt Options, tok Tokenizer) (*planfile.Plan, attest.Identity, error) {
	if err := Verify(m); err != nil {
		return nil, attest.Identity{}, fmt.Errorf("refusing to seal the module: %w", err)
	}
	src, config, err := sourceOf(model.Source, model.Config)
	if err != nil {
		return nil, attest.Identity{}, err
	}
	src.Tokenizer = tok.Path
	p := &planfile.Plan{Backend: Backend, Source: src, Passes: passesOf(opt, m.Meta), Config: config}
	p.SetModule(m)
	id, err := ModelIdentity(model.Weights, config, tok.Bytes, IdentityFlags(model.Config, p.Backend, p.Passes))
	if err != nil {
		return nil, attest.Identity{}, err
	}
	if p.Identity, err = json.Marshal(id); err != nil {
		return nil, attest.Identity{}, fmt.Errorf("encoding the model identity: %v", err)
	}
	p.IdentityDigest = id.Digest.String()
	return p, id, nil
}

// Encode writes p as plan-file bytes, and refuses to return bytes this
// build would refuse to read.
func Encode(p *planfile.Plan) ([]byte, error) {
	data := planfile.Encode(p)
	if _, err := planfile.Decode(data); err != nil {
		return nil, fmt.Errorf("internal error: the plan does not read back: %w", err)
	}
	return data, nil
}

// sourceOf describes where a model's weights come from and returns the
// config bytes the identity hashes: config.json as it is on disk, or a
// variant's canonical JSON.
func sourceOf(s models.Source, cfg *models.Config) (planfile.Source, []byte, error) {
	if s.GGUF != "" {
		// The config is what the metadata amounts to; the identity hashes
		// it and the f32 values the tensors are read as (an exact function
		// of the stored blocks), like every other source.
		return planfile.Source{Kind: planfile.SourceGGUF, Name: s.GGUF}, cfg.JSON(), nil
	}
	if s.IsDir() {
		path := filepath.Join(s.Dir, "config.json")
		config, err := os.ReadFile(path)
		if err != nil {
			return planfile.Source{}, nil, fmt.Errorf("config: %w", err)
		}
		onDisk, err := models.ParseConfig(path, config)
		if err != nil {
			return planfile.Source{}, nil, err
		}
		if !bytes.Equal(onDisk.JSON(), cfg.JSON()) {
			return planfile.Source{}, nil, fmt.Errorf("%s changed while the model was being loaded", path)
		}
		return planfile.Source{Kind: planfile.SourceDir, Name: s.Dir}, config, nil
	}
	if s.Builtin != "" {
		// The embedded config.json, hashed as a directory's file is: the
		// built-in model and the directory it was embedded from have one
		// identity.
		config, err := models.BuiltinConfigBytes(s.Builtin)
		if err != nil {
			return planfile.Source{}, nil, err
		}
		return planfile.Source{Kind: planfile.SourceBuiltin, Name: s.Builtin}, config, nil
	}
	return planfile.Source{Kind: planfile.SourceVariant, Name: s.Variant, Seed: s.Seed, SynthDType: s.SynthDType}, cfg.JSON(), nil
}

var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// ModelIdentity hashes the weights as the runtime holds them (f32,
// canonical order; and a tensor's stored blocks, which a q4_k plan
// multiplies as they are, after it), the config bytes, the tokenizer and
// the numerics flags.
func ModelIdentity(w *models.Weights, config, tokenizer []byte, flags map[string]string) (attest.Identity, error) {
	names := w.Names()
	tensors := make([]attest.TensorInput, 0, len(names))
	for _, n := range names {
		if sum, size, ok := w.F32Digest(n); ok {
			// Hashed by the loader as it read and sealed the tensor: every
			// read gives those values, so they need no reading again.
			_, shape, err := w.Shape(n)
			if err != nil {
				return attest.Identity{}, err
			}
			tensors = append(tensors, attest.TensorInput{Name: n, DType: tensorDType, Shape: shape, Sum: &sum, Bytes: size})
		} else {
			// Streamed: a lazy tensor is hashed a chunk at a time, never
			// made resident for it.
			r, shape, err := w.Reader(n)
			if err != nil {
				return attest.Identity{}, err
			}
			tensors = append(tensors, attest.TensorInput{Name: n, DType: tensorDType, Shape: shape, Reader: r})
		}
		if sb, ok := w.Blocks(n); ok {
			tensors = append(tensors, attest.TensorInput{Name: n + "#stored", DType: strings.ToLower(sb.Type.String()), Shape: tensors[len(tensors)-1].Shape, Data: sb.Data})
		}
	}
	return attest.ComputeIdentity(attest.IdentityInput{Config: config, Tensors: tensors, Tokenizer: tokenizer, Flags: flags})
}

// Identity decodes the identity a plan seals and checks that it is
// consistent, in canonical form, and that its numerics flags are the ones
// the plan's config and pass configuration imply. path names the file in
// errors.
func Identity(path string, p *planfile.Plan) (attest.Identity, error) {
	fail := func(format string, args ...any) error {
		return &planfile.Error{File: path, Section: planfile.SectionIdentity, Msg: fmt.Sprintf(format, args...)}
	}
	var id attest.Identity
	dec := json.NewDecoder(bytes.NewReader(p.Identity))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&id); err != nil {
		return id, fail("not a model identity: %v", err)
	}
	if err := id.Validate(); err != nil {
		return id, fail("%v", err)
	}
	if id.Digest.String() != p.IdentityDigest {
		return id, fail("digest mismatch: meta says %s, the identity is %s", p.IdentityDigest, id.Digest)
	}
	if canon, err := json.Marshal(id); err != nil || !bytes.Equal(canon, p.Identity) {
		return id, fail("not in canonical form")
	}
	if got := attest.ConfigDigest(p.Config); got != id.Config {
		return id, &planfile.Error{File: path, Section: planfile.SectionConfig,
			Msg: fmt.Sprintf("the config section hashes to %s, the model identity binds %s", got, id.Config)}
	}
	cfg, err := models.ParseConfig("plan", p.Config)
	if err != nil {
		return id, &planfile.Error{File: path, Section: planfile.SectionConfig, Msg: err.Error(), Err: err}
	}
	want := IdentityFlags(cfg, p.Backend, p.Passes)
	keys := make([]string, 0, len(want)+len(id.Flags))
	for k := range want {
		keys = append(keys, k)
	}
	for k := range id.Flags {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		got, ok := id.Flags[k]
		if !ok || got != want[k] {
			return id, fail("numerics flag %q is %q (set: %v), the plan's config and passes imply %q", k, got, ok, want[k])
		}
	}
	return id, nil
}

// ReadArtifact reads an IR text artifact or a plan file (by its magic, or
// a .gelo name); for a plan it returns the plan too.
func ReadArtifact(path string) (*ir.Module, *planfile.Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	if !planfile.IsPlan(data) && !IsPlanName(path) {
		m, err := ir.Parse(string(data))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		return m, nil, nil
	}
	p, err := planfile.Decode(data)
	if err != nil {
		var pe *planfile.Error
		if errors.As(err, &pe) {
			pe.File = path
		}
		return nil, nil, err
	}
	m, err := p.Module()
	if err != nil {
		return nil, nil, err
	}
	return m, p, nil
}

// ReadSealed reads a plan file and its checked identity (for attest and
// verify); IR text is refused.
func ReadSealed(path string) (*planfile.Plan, attest.Identity, error) {
	m, p, err := ReadArtifact(path)
	if err != nil {
		return nil, attest.Identity{}, err
	}
	if p == nil || m == nil {
		return nil, attest.Identity{}, fmt.Errorf("%s is IR text, not a sealed plan file (compile with --out NAME%s)", path, planfile.Ext)
	}
	id, err := Identity(path, p)
	if err != nil {
		return nil, attest.Identity{}, err
	}
	if err := Verify(m); err != nil {
		return nil, attest.Identity{}, fmt.Errorf("plan %s: refusing it: %w", path, err)
	}
	return p, id, nil
}

// Verify is the check every module passes before it is lowered, sealed or
// attested, whatever its origin (passes.Verify): valid IR, leakcheck, the
// insecure label the compiler would give it, and every unmask paired with
// its mask; and no float attribute NaN or infinite.
func Verify(m *ir.Module) error {
	if err := finiteAttrs(m); err != nil {
		return err
	}
	return passes.Verify(m)
}

// finiteAttrs refuses a float attribute that is NaN or infinite (an
// attention scale, a norm's epsilon, a rope base): nothing computed with
// one means anything, and left to run it would surface as whatever it
// breaks first (a NaN logit, a shield's energy), far from its cause.
func finiteAttrs(m *ir.Module) error {
	for _, g := range m.Graphs {
		for _, n := range g.Nodes {
			for _, k := range n.Attrs.Keys() {
				if v, ok := n.Attrs.Float(k); ok && (math.IsNaN(v) || math.IsInf(v, 0)) {
					return fmt.Errorf("graph %s: %v = %s: attribute %s is %v (it must be finite)", g.Name, n.ID, n.Op, k, v)
				}
			}
		}
	}
	return nil
}

// Overrides replace what a sealed plan records about where its model
// comes from; whatever is loaded must still hash to the sealed identity.
type Overrides struct {
	// Model, if not "", loads this spec instead of the plan's source (and
	// then the plan's recorded tokenizer path is not used).
	Model string
	// Seed, if not nil, replaces the plan's variant seed.
	Seed *uint64
	// Tokenizer, if not "", is the tokenizer file or directory to check.
	Tokenizer string
	// Progress, if not nil, sees the weight loading of a directory: the
	// spec being loaded and the elements done out of the total.
	Progress func(spec string, done, total int64)
}

// OpenSealed loads the weights a sealed plan was compiled for (from its
// recorded source, or the overrides), recomputes the model identity and
// refuses to go on when it differs from the sealed one, naming what
// differs. path names the plan in errors. On success the caller owns the
// model (Close it).
func OpenSealed(path string, p *planfile.Plan, ov Overrides) (*models.Model, attest.Identity, error) {
	o, err := OpenSealedTokenizer(path, p, ov)
	return o.Model, o.Identity, err
}

// Opened is a sealed plan's model as OpenSealedTokenizer checked it.
type Opened struct {
	Model    *models.Model
	Identity attest.Identity
	// Tokenizer is the one whose bytes the identity check hashed (zero
	// when the plan binds none): the one to encode and decode with.
	Tokenizer Tokenizer
}

// OpenSealedTokenizer is OpenSealed that also returns the tokenizer it
// checked, parsed from the very bytes it hashed.
func OpenSealedTokenizer(path string, p *planfile.Plan, ov Overrides) (Opened, error) {
	model, id, tok, err := openSealed(path, p, ov)
	return Opened{Model: model, Identity: id, Tokenizer: tok}, err
}

func openSealed(path string, p *planfile.Plan, ov Overrides) (*models.Model, attest.Identity, Tokenizer, error) {
	if p.Backend != Backend {
		return nil, attest.Identity{}, Tokenizer{}, fmt.Errorf("plan %s is lowered for backend %q; this build runs %q plans", path, p.Backend, Backend)
	}
	want, err := Identity(path, p)
	if err != nil {
		return nil, attest.Identity{}, Tokenizer{}, err
	}
	spec, seed, synth := p.Source.Name, p.Source.Seed, p.Source.SynthDType
	if ov.Model != "" {
		spec = ov.Model
	}
	if ov.Seed != nil {
		seed = *ov.Seed
	}
	var progress func(done, total int64)
	if ov.Progress != nil {
		progress = func(done, total int64) { ov.Progress(spec, done, total) }
	}
	// What is hashed below is what computes: every tensor read once,
	// checked on every later read, no shared mapping of a file that can
	// be rewritten after the check.
	model, err := models.OpenPrivate(spec, seed, synth, progress)
	if err != nil {
		return nil, attest.Identity{}, Tokenizer{}, fmt.Errorf("plan %s: %w", path, err)
	}
	fail := func(err error) (*models.Model, attest.Identity, Tokenizer, error) {
		model.Close()
		return nil, attest.Identity{}, Tokenizer{}, err
	}
	_, config, err := sourceOf(model.Source, model.Config)
	if err != nil {
		return fail(err)
	}
	tokPath := ov.Tokenizer
	if tokPath == "" && ov.Model == "" {
		tokPath = p.Source.Tokenizer
	}
	tok, err := ModelTokenizer(tokPath, model)
	if err != nil {
		return fail(fmt.Errorf("refusing to run sealed plan %s: %w", path, err))
	}
	got, err := ModelIdentity(model.Weights, config, tok.Bytes, IdentityFlags(model.Config, p.Backend, p.Passes))
	if err != nil {
		return fail(err)
	}
	if err := want.Compare(got); err != nil {
		var files []string
		if want.Weights != got.Weights {
			files = append(files, "weights: "+weightFiles(model.Source))
		}
		if want.Config != got.Config {
			switch {
			case model.GGUF != "":
				files = append(files, "config: the metadata of "+model.GGUF)
			case model.IsDir():
				files = append(files, "config: "+filepath.Join(model.Dir, "config.json"))
			case model.Builtin != "":
				files = append(files, "config: the config.json built into this binary as "+model.Builtin)
			default:
				files = append(files, "config: the built-in config of variant "+spec)
			}
		}
		if want.Tokenizer != got.Tokenizer || want.HasTokenizer != got.HasTokenizer {
			if tok.Path == "" {
				files = append(files, "tokenizer: none found")
			} else {
				files = append(files, "tokenizer: "+tok.Path)
			}
		}
		if want.FlagsDigest != got.FlagsDigest {
			files = append(files, "numerics flags (from the config)")
		}
		return fail(fmt.Errorf("refusing to run sealed plan %s: the model loaded from %s is not the one it was sealed for (differs: %s): %w",
			path, spec, strings.Join(files, "; "), err))
	}
	return model, got, tok, nil
}

// weightFiles names where a model's weights were read from.
func weightFiles(s models.Source) string {
	if s.GGUF != "" {
		return s.GGUF
	}
	if s.Builtin != "" {
		return "the model.safetensors built into this binary as " + s.Builtin
	}
	if !s.IsDir() {
		return fmt.Sprintf("the synthetic weights of variant %s, seed %d (%s)", s.Variant, s.Seed, s.SynthDType)
	}
	files, _ := filepath.Glob(filepath.Join(s.Dir, "*.safetensors"))
	sort.Strings(files)
	if len(files) == 0 {
		return s.Dir
	}
	return strings.Join(files, ", ")
}
