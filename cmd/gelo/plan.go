package main

// Sealed plans: compile --out NAME.gelo, inspect and diff of plan files, generate --plan with
// the model identity check, and the attest and verify verbs.

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	"gelo/attest"
	"gelo/ir"
	"gelo/models"
	"gelo/runtime/planfile"
)

// What a plan compiled by this build records and what generate --plan can run.
const (
	planBackend = "cpu"
	// planWeightFormat is the device weight format of a plan whose IR does not say.
	planWeightFormat = "f32"
	// planSynthDType is the dtype built-in variants' synthetic weights are rounded through
	// (the one modelFlags.load uses).
	planSynthDType = "bf16"
	// tensorDType is how tensors enter the identity: the f32 values the runtime loads (a
	// quantized plan derives its device weights from them; the "weights" flag says how).
	tensorDType = "F32"
	// tokenizerFileName is the file a tokenizer directory holds.
	tokenizerFileName = "tokenizer.json"
)

// isPlanName reports whether an --out name asks for a plan file.
func isPlanName(path string) bool { return strings.HasSuffix(path, planfile.Ext) }

// compilePlan compiles the model and writes a sealed plan file: the identity needs the
// weights, so they are loaded (and hashed, not copied).
func compilePlan(mf *modelFlags, out, tokFlag string, stderr io.Writer) error {
	po, err := mf.protectOptions()
	if err != nil {
		return err
	}
	l, err := mf.load(stderr)
	if err != nil {
		return err
	}
	defer l.weights.Close()
	src, config, err := sourceOf(mf.model, mf.seed, l.cfg)
	if err != nil {
		return err
	}
	modelDir := ""
	if src.Kind == planfile.SourceDir {
		modelDir = mf.model
	}
	tokPath, tok, err := tokenizerFile(tokFlag, modelDir)
	if err != nil {
		return err
	}
	src.Tokenizer = tokPath
	m, err := mf.compile(l.cfg, stderr)
	if err != nil {
		return err
	}
	if t := m.Meta["topology"]; t != "" {
		po.Topology = t // the effective topology ("" means the default)
	}
	p := &planfile.Plan{
		Backend: planBackend,
		Source:  src,
		Passes: planfile.Passes{
			Pipeline: splitList(m.Meta["passes"]),
			Mask:     po.Mask, Cadence: po.Cadence, Topology: po.Topology,
			ShieldK: po.ShieldK, ShieldEnergy: po.ShieldEnergy, Center: po.Center,
			Fusions:      fusionsOf(m),
			WeightFormat: weightFormatOf(m),
		},
		Config: config,
	}
	p.SetModule(m)
	id, err := modelIdentity(l.weights, config, tok, identityFlags(l.cfg, p))
	if err != nil {
		return err
	}
	if p.Identity, err = json.Marshal(id); err != nil {
		return fmt.Errorf("encoding the model identity: %v", err)
	}
	p.IdentityDigest = id.Digest.String()
	data := planfile.Encode(p)
	// Never write a plan this build would refuse to read.
	if _, err := planfile.Decode(data); err != nil {
		return fmt.Errorf("internal error: the plan does not read back: %w", err)
	}
	if err := writeAtomic(out, data); err != nil {
		return err
	}
	d := p.Digest()
	fmt.Fprintf(stderr, "wrote %s: plan %x, model identity %s, IR %s\n", out, d, id.Digest, p.IRDigest)
	return nil
}

// weightFormatOf is the device weight format the quantize pass chose (IR meta "weights").
func weightFormatOf(m *ir.Module) string {
	if w := m.Meta["weights"]; w != "" {
		return w
	}
	return planWeightFormat
}

// fusionsOf lists the fusions the fuse pass applied (IR meta "fusions").
func fusionsOf(m *ir.Module) []string {
	f := m.Meta["fusions"]
	if f == "none" {
		return []string{}
	}
	return append([]string{}, splitList(f)...)
}

// sourceOf describes where the weights of --model come from and returns the config bytes
// the identity hashes: config.json as it is on disk, or a variant's canonical JSON.
func sourceOf(model string, seed uint64, cfg *models.Config) (planfile.Source, []byte, error) {
	if st, err := os.Stat(model); err == nil && st.IsDir() {
		path := filepath.Join(model, "config.json")
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
		return planfile.Source{Kind: planfile.SourceDir, Name: model}, config, nil
	}
	return planfile.Source{Kind: planfile.SourceVariant, Name: model, Seed: seed, SynthDType: planSynthDType}, cfg.JSON(), nil
}

// tokenizerFile resolves the tokenizer bound into the identity: --tokenizer (a file, or a
// directory holding tokenizer.json), else the model directory's tokenizer.json when it has
// one, else none.
func tokenizerFile(flagValue, modelDir string) (string, []byte, error) {
	path := flagValue
	if path != "" {
		if st, err := os.Stat(path); err == nil && st.IsDir() {
			path = filepath.Join(path, tokenizerFileName)
		}
	} else if modelDir != "" {
		path = filepath.Join(modelDir, tokenizerFileName)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return "", nil, nil
		}
	} else {
		return "", nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", nil, fmt.Errorf("tokenizer: %w", err)
	}
	if data == nil {
		data = []byte{}
	}
	return path, data, nil
}

// identityFlags are the settings that change numerics, as the identity records them: the
// architecture switches the config implies and the plan's backend, weight format and
// protection (masking is exact only up to rounding).
func identityFlags(cfg *models.Config, p *planfile.Plan) map[string]string {
	ps := p.Passes
	return map[string]string{
		"backend":             p.Backend,
		"weights":             ps.WeightFormat,
		"qk_norm":             strconv.FormatBool(cfg.QKNorm()),
		"qkv_bias":            strconv.FormatBool(cfg.QKVBias()),
		"o_bias":              strconv.FormatBool(cfg.OBias()),
		"tie_word_embeddings": strconv.FormatBool(cfg.TieWordEmbeddings),
		"mask":                ps.Mask,
		"cadence":             ps.Cadence,
		"topology":            ps.Topology,
		"shield":              strconv.Itoa(ps.ShieldK) + "," + strconv.FormatFloat(ps.ShieldEnergy, 'g', -1, 64),
		"center":              strconv.FormatBool(ps.Center),
		"fusions":             strings.Join(ps.Fusions, ","),
	}
}

var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// f32Bytes returns the little-endian bytes of v: a view on little-endian machines, a copy
// otherwise.
func f32Bytes(v []float32) []byte {
	if len(v) == 0 {
		return []byte{}
	}
	if littleEndian {
		return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
	}
	out := make([]byte, 4*len(v))
	for i, x := range v {
		b := math.Float32bits(x)
		out[4*i], out[4*i+1], out[4*i+2], out[4*i+3] = byte(b), byte(b>>8), byte(b>>16), byte(b>>24)
	}
	return out
}

// modelIdentity hashes the weights as the runtime holds them (f32, canonical order), the
// config bytes, the tokenizer and the numerics flags.
func modelIdentity(w *models.Weights, config, tokenizer []byte, flags map[string]string) (attest.Identity, error) {
	names := w.Names()
	tensors := make([]attest.TensorInput, len(names))
	for i, n := range names {
		data, shape, err := w.Get(n)
		if err != nil {
			return attest.Identity{}, err
		}
		tensors[i] = attest.TensorInput{Name: n, DType: tensorDType, Shape: shape, Data: f32Bytes(data)}
	}
	return attest.ComputeIdentity(attest.IdentityInput{Config: config, Tensors: tensors, Tokenizer: tokenizer, Flags: flags})
}

// planIdentity decodes the identity a plan seals and checks that it is consistent, in
// canonical form, and that its numerics flags are the ones the plan's config and pass
// configuration imply.
func planIdentity(path string, p *planfile.Plan) (attest.Identity, error) {
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
	cfg, err := models.ParseConfig("plan", p.Config)
	if err != nil {
		return id, &planfile.Error{File: path, Section: planfile.SectionConfig, Msg: err.Error(), Err: err}
	}
	want := identityFlags(cfg, p)
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

// readArtifactOrPlan reads an IR text artifact or a plan file (by its magic, or a .gelo
// name); for a plan it returns the plan too.
func readArtifactOrPlan(path string) (*ir.Module, *planfile.Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	if !planfile.IsPlan(data) && !isPlanName(path) {
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

// loadSealed loads the weights a sealed plan was compiled for (from its recorded source, or
// --model/--seed when given), recomputes the model identity and refuses to go on when it
// differs from the sealed one, naming the file that differs.
func loadSealed(flags *flag.FlagSet, mf *modelFlags, path string, p *planfile.Plan, tokFlag string, stderr io.Writer) (*loaded, error) {
	if p.Backend != planBackend {
		return nil, fmt.Errorf("plan %s is lowered for backend %q; this build runs %q plans", path, p.Backend, planBackend)
	}
	want, err := planIdentity(path, p)
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	flags.Visit(func(f *flag.Flag) { set[f.Name] = true })
	model, seed, synth := p.Source.Name, p.Source.Seed, p.Source.SynthDType
	if set["model"] {
		model = mf.model
	}
	if set["seed"] {
		seed = mf.seed
	}
	if synth == "" {
		synth = planSynthDType
	}

	var l *loaded
	var config []byte
	modelDir := ""
	if st, err := os.Stat(model); err == nil && st.IsDir() {
		modelDir = model
		bar := newProgress(stderr, "load "+model)
		w, err := models.LoadWithProgress(model, bar.update)
		bar.done()
		if err != nil {
			return nil, err
		}
		l = &loaded{cfg: w.Config, weights: w, source: model}
		if _, config, err = sourceOf(model, 0, w.Config); err != nil {
			w.Close()
			return nil, err
		}
	} else {
		cfg, err := models.Variant(model)
		if err != nil {
			return nil, fmt.Errorf("plan %s: model %s: not a directory, and %w", path, model, err)
		}
		w, err := models.SynthesizeAs(cfg, seed, synth)
		if err != nil {
			return nil, err
		}
		l = &loaded{cfg: cfg, weights: w, source: model}
		config = cfg.JSON()
	}
	fail := func(err error) (*loaded, error) {
		l.weights.Close()
		return nil, err
	}

	tokPath := tokFlag
	if tokPath == "" && !set["model"] {
		tokPath = p.Source.Tokenizer
	}
	tokPath, tok, err := tokenizerFile(tokPath, modelDir)
	if err != nil {
		return fail(fmt.Errorf("refusing to run sealed plan %s: %w", path, err))
	}
	got, err := modelIdentity(l.weights, config, tok, identityFlags(l.cfg, p))
	if err != nil {
		return fail(err)
	}
	if err := want.Compare(got); err != nil {
		var files []string
		if want.Weights != got.Weights {
			files = append(files, "weights: "+weightFiles(modelDir, model, seed, synth))
		}
		if want.Config != got.Config {
			if modelDir != "" {
				files = append(files, "config: "+filepath.Join(modelDir, "config.json"))
			} else {
				files = append(files, "config: the built-in config of variant "+model)
			}
		}
		if want.Tokenizer != got.Tokenizer || want.HasTokenizer != got.HasTokenizer {
			if tokPath == "" {
				files = append(files, "tokenizer: none found")
			} else {
				files = append(files, "tokenizer: "+tokPath)
			}
		}
		if want.FlagsDigest != got.FlagsDigest {
			files = append(files, "numerics flags (from the config)")
		}
		return fail(fmt.Errorf("refusing to run sealed plan %s: the model loaded from %s is not the one it was sealed for (differs: %s): %w",
			path, model, strings.Join(files, "; "), err))
	}
	fmt.Fprintf(stderr, "sealed plan %s: model identity %s verified (weights, config, tokenizer, flags of %s)\n", path, got.Digest, model)
	return l, nil
}

// weightFiles names where a model's weights were read from.
func weightFiles(dir, model string, seed uint64, synth string) string {
	if dir == "" {
		return fmt.Sprintf("the synthetic weights of variant %s, seed %d (%s)", model, seed, synth)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	sort.Strings(files)
	if len(files) == 0 {
		return dir
	}
	return strings.Join(files, ", ")
}

// printPlanHeader prints what a plan file holds apart from its IR, as comment lines.
func printPlanHeader(w io.Writer, path string, p *planfile.Plan) error {
	id, err := planIdentity(path, p)
	if err != nil {
		return err
	}
	data := planfile.Encode(p)
	infos, _, err := planfile.Layout(data)
	if err != nil {
		return err
	}
	var sizes []string
	for _, s := range infos {
		sizes = append(sizes, fmt.Sprintf("%s %d B", s.Name, s.Length))
	}
	d := p.Digest()
	fmt.Fprintf(w, "// plan file %s\n", path)
	fmt.Fprintf(w, "//   format:         %s version %d, %d bytes (sections: %s)\n", planfile.Magic, planfile.FormatVersion, len(data), strings.Join(sizes, ", "))
	fmt.Fprintf(w, "//   plan digest:    %x\n", d)
	fmt.Fprintf(w, "//   backend:        %s\n", p.Backend)
	fmt.Fprintf(w, "//   model source:   %s\n", sourceText(p.Source))
	fmt.Fprintf(w, "//   model identity: %s\n", id.Digest)
	fmt.Fprintf(w, "//     config:       %s\n", id.Config)
	var total int64
	for _, t := range id.Tensors {
		total += t.Bytes
	}
	fmt.Fprintf(w, "//     weights:      %s (%d tensors, %d bytes as %s)\n", id.Weights, len(id.Tensors), total, tensorDType)
	tok := "none"
	if id.HasTokenizer {
		tok = p.Source.Tokenizer
	}
	fmt.Fprintf(w, "//     tokenizer:    %s (%s)\n", id.Tokenizer, tok)
	fmt.Fprintf(w, "//     flags:        %s (%s)\n", id.FlagsDigest, flagsText(id.Flags))
	fmt.Fprintf(w, "//   passes:         %s\n", strings.Join(p.Passes.Pipeline, ","))
	fmt.Fprintf(w, "//     %s\n", passesText(p.Passes))
	fmt.Fprintf(w, "//   IR digest:      %s\n", p.IRDigest)
	for _, ph := range p.Phases {
		fmt.Fprintf(w, "//     %-13s %s\n", ph.Name+":", ph.Digest)
	}
	return nil
}

func sourceText(s planfile.Source) string {
	var b strings.Builder
	if s.Kind == planfile.SourceVariant {
		fmt.Fprintf(&b, "variant %s, seed %d, synthesized as %s", s.Name, s.Seed, s.SynthDType)
	} else {
		fmt.Fprintf(&b, "directory %s", s.Name)
	}
	tok := s.Tokenizer
	if tok == "" {
		tok = "none"
	}
	fmt.Fprintf(&b, "; tokenizer %s", tok)
	return b.String()
}

func passesText(ps planfile.Passes) string {
	fusions := strings.Join(ps.Fusions, ",")
	if fusions == "" {
		fusions = "none"
	}
	return fmt.Sprintf("mask %s, cadence %s, topology %s, shield %d rows x energy %s, center %v, fusions %s, weights %s",
		ps.Mask, ps.Cadence, ps.Topology, ps.ShieldK, strconv.FormatFloat(ps.ShieldEnergy, 'g', -1, 64), ps.Center, fusions, ps.WeightFormat)
}

func flagsText(flags map[string]string) string {
	keys := make([]string, 0, len(flags))
	for k := range flags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+flags[k])
	}
	return strings.Join(parts, " ")
}

// writePlanDiff prints how two plans differ outside their IR (for gelo diff); it says so
// when only one of the two artifacts is a plan.
func writePlanDiff(w io.Writer, pathA string, a *planfile.Plan, pathB string, b *planfile.Plan) error {
	switch {
	case a == nil && b == nil:
		return nil
	case a == nil || b == nil:
		which, other := pathA, pathB
		if b != nil {
			which, other = pathB, pathA
		}
		fmt.Fprintf(w, "// %s is a plan file, %s is IR text: comparing the IR only\n", which, other)
		return nil
	}
	var diffs []string
	add := func(field, x, y string) {
		if x != y {
			diffs = append(diffs, fmt.Sprintf("%s: %s -> %s", field, x, y))
		}
	}
	da, db := a.Digest(), b.Digest()
	add("plan digest", hex.EncodeToString(da[:]), hex.EncodeToString(db[:]))
	add("backend", a.Backend, b.Backend)
	add("model source", sourceText(a.Source), sourceText(b.Source))
	add("pipeline", strings.Join(a.Passes.Pipeline, ","), strings.Join(b.Passes.Pipeline, ","))
	add("passes", passesText(a.Passes), passesText(b.Passes))
	ida, err := planIdentity(pathA, a)
	if err != nil {
		return err
	}
	idb, err := planIdentity(pathB, b)
	if err != nil {
		return err
	}
	if err := ida.Compare(idb); err != nil {
		var me *attest.MismatchError
		if errors.As(err, &me) {
			diffs = append(diffs, fmt.Sprintf("model identity: %s -> %s", me.Want, me.Got))
			for _, d := range me.Diffs {
				diffs = append(diffs, "  "+d)
			}
		} else {
			diffs = append(diffs, "model identity: "+err.Error())
		}
	}
	add("IR digest", a.IRDigest, b.IRDigest)
	phases := func(p *planfile.Plan) string {
		var s []string
		for _, ph := range p.Phases {
			s = append(s, ph.Name)
		}
		return strings.Join(s, ",")
	}
	add("phases", phases(a), phases(b))
	for i := range min(len(a.Phases), len(b.Phases)) {
		if a.Phases[i].Name == b.Phases[i].Name {
			add("phase "+a.Phases[i].Name, a.Phases[i].Digest, b.Phases[i].Digest)
		}
	}
	if len(diffs) == 0 {
		fmt.Fprintln(w, "// plan headers: identical")
		return nil
	}
	fmt.Fprintln(w, "// plan header differences:")
	for _, d := range diffs {
		fmt.Fprintf(w, "//   %s\n", d)
	}
	return nil
}

// parseInterspersed parses flags that may come before or after the positional arguments
// (gelo attest PLAN --nonce ... as well as gelo attest --nonce ... PLAN).
func parseInterspersed(fs *flag.FlagSet, args []string, stderr io.Writer) ([]string, error) {
	var pos []string
	for {
		if err := parse(fs, args, stderr); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func parseNonce(s string) ([]byte, error) {
	if s == "" {
		return nil, fmt.Errorf("%w: --nonce is required (hex, %d to %d bytes, fresh from the verifier)", errUsage, attest.MinNonceLen, attest.MaxNonceLen)
	}
	n, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: --nonce is not hex: %v", errUsage, err)
	}
	if len(n) < attest.MinNonceLen || len(n) > attest.MaxNonceLen {
		return nil, fmt.Errorf("%w: --nonce must be %d to %d bytes, got %d", errUsage, attest.MinNonceLen, attest.MaxNonceLen, len(n))
	}
	return n, nil
}

// readPlan reads a plan file and its identity for attest and verify.
func readPlan(path string) (*planfile.Plan, attest.Identity, error) {
	m, p, err := readArtifactOrPlan(path)
	if err != nil {
		return nil, attest.Identity{}, err
	}
	if p == nil || m == nil {
		return nil, attest.Identity{}, fmt.Errorf("%s is IR text, not a sealed plan file (compile with --out NAME%s)", path, planfile.Ext)
	}
	id, err := planIdentity(path, p)
	if err != nil {
		return nil, attest.Identity{}, err
	}
	return p, id, nil
}

func runAttest(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("attest", flag.ContinueOnError)
	nonceHex := fs.String("nonce", "", "the verifier's fresh nonce, hex (16 to 64 bytes)")
	out := fs.String("out", "", "write the evidence here")
	simulated := fs.Bool("simulated", false, "use a simulated SEV-SNP device (go-sev-guest's test-only signer): for testing off SEV-SNP hardware; the evidence says SIMULATED")
	simSeed := fs.Int64("sim-seed", 1, "seed of the simulated chip (with --simulated)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: gelo attest PLAN.gelo --nonce HEX --out EVIDENCE [--simulated]")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: attest takes one plan file, got %d", errUsage, len(pos))
	}
	if *out == "" {
		return fmt.Errorf("%w: --out is required", errUsage)
	}
	nonce, err := parseNonce(*nonceHex)
	if err != nil {
		return err
	}
	p, id, err := readPlan(pos[0])
	if err != nil {
		return err
	}
	var a attest.Attester
	if *simulated {
		a, err = attest.NewSimulatedAttester(*simSeed)
	} else if a, err = attest.NewAttester(); err != nil {
		err = fmt.Errorf("%v; to produce simulated evidence (for testing only), pass --simulated", err)
	}
	if err != nil {
		return err
	}
	ev, err := attest.Seal(a, p.Digest(), id, nonce)
	if err != nil {
		return err
	}
	data, err := attest.MarshalEvidence(ev)
	if err != nil {
		return err
	}
	if err := writeAtomic(*out, data); err != nil {
		return err
	}
	rd, _ := ev.ReportData()
	d := p.Digest()
	if ev.Simulated {
		fmt.Fprintln(stdout, "SIMULATED attestation: this evidence is simulated (go-sev-guest's test-only AMD keys on a simulated SEV-SNP device, not AMD hardware)")
	}
	fmt.Fprintf(stdout, "wrote %s: %s\n", *out, ev)
	fmt.Fprintf(stdout, "  plan:           %s (plan digest %x)\n", pos[0], d)
	fmt.Fprintf(stdout, "  model identity: %s\n", id.Digest)
	fmt.Fprintf(stdout, "  nonce:          %x\n", nonce)
	fmt.Fprintf(stdout, "  REPORT_DATA:    %x\n", rd)
	return nil
}

// parseTCB reads "bl=3,tee=0,snp=20,ucode=209" (commas or spaces; missing parts are 0).
func parseTCB(s string) (attest.TCB, error) {
	var t attest.TCB
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		k, v, ok := strings.Cut(f, "=")
		n, err := strconv.ParseUint(v, 10, 8)
		if !ok || err != nil {
			return t, fmt.Errorf("%w: --min-tcb %q: %q is not NAME=0..255", errUsage, s, f)
		}
		switch k {
		case "bl", "bootloader":
			t.BootLoader = uint8(n)
		case "tee":
			t.TEE = uint8(n)
		case "snp":
			t.SNP = uint8(n)
		case "ucode", "microcode":
			t.Microcode = uint8(n)
		default:
			return t, fmt.Errorf("%w: --min-tcb %q: unknown part %q (want bl, tee, snp, ucode)", errUsage, s, k)
		}
	}
	return t, nil
}

func runVerify(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	evPath := fs.String("evidence", "", "the evidence file (from gelo attest)")
	nonceHex := fs.String("nonce", "", "the nonce the verifier issued, hex")
	allowSim := fs.Bool("allow-simulated", false, "accept simulated evidence (signed by go-sev-guest's test root): for testing only")
	allowDebug := fs.Bool("allow-debug", false, "accept a guest whose policy allows debugging")
	measurement := fs.String("measurement", "", "expected launch MEASUREMENT, hex (48 bytes)")
	minTCB := fs.String("min-tcb", "", "minimum REPORTED_TCB, e.g. bl=3,tee=0,snp=20,ucode=209")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: gelo verify PLAN.gelo --evidence EVIDENCE --nonce HEX [--allow-simulated] [--measurement HEX] [--min-tcb ...]")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: verify takes one plan file, got %d", errUsage, len(pos))
	}
	if *evPath == "" {
		return fmt.Errorf("%w: --evidence is required", errUsage)
	}
	nonce, err := parseNonce(*nonceHex)
	if err != nil {
		return err
	}
	pol := attest.Policy{AllowSimulated: *allowSim, AllowDebug: *allowDebug}
	if pol.MinimumTCB, err = parseTCB(*minTCB); err != nil {
		return err
	}
	if *measurement != "" {
		if pol.Measurement, err = hex.DecodeString(*measurement); err != nil {
			return fmt.Errorf("%w: --measurement is not hex: %v", errUsage, err)
		}
	}
	p, id, err := readPlan(pos[0])
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(*evPath)
	if err != nil {
		return err
	}
	ev, err := attest.UnmarshalEvidence(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", *evPath, err)
	}
	d := p.Digest()
	rep, err := attest.VerifySealed(ev, d, id, nonce, pol)
	if err != nil {
		return fmt.Errorf("refused: evidence %s does not attest plan %s with nonce %x: %w", *evPath, pos[0], nonce, err)
	}
	fmt.Fprintf(stdout, "plan:           %s (plan digest %x)\n", pos[0], d)
	fmt.Fprintf(stdout, "model identity: %s\n", id.Digest)
	fmt.Fprintf(stdout, "nonce:          %x\n", nonce)
	io.WriteString(stdout, rep.String())
	meas := "any"
	if pol.Measurement != nil {
		meas = hex.EncodeToString(pol.Measurement)
	}
	fmt.Fprintf(stdout, "policy:         simulated allowed=%v, debug allowed=%v, minimum TCB %v, measurement %s\n",
		pol.AllowSimulated, pol.AllowDebug, pol.MinimumTCB, meas)
	if rep.Simulated {
		fmt.Fprintln(stdout, "verified (SIMULATED evidence: proves nothing about where the plan ran): REPORT_DATA binds this plan, its model identity and the nonce")
	} else {
		fmt.Fprintln(stdout, "verified: REPORT_DATA binds this plan, its model identity and the nonce; signature chain to AMD; policy met")
	}
	return nil
}
