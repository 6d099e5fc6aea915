package main

// Sealed plans: compile --out NAME.gelo, inspect and diff of plan files, generate --plan with
// the model identity check, and the attest and verify verbs.

import (
	"cmp"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"gelo/attest"
	"gelo/models"
	"gelo/passes"
	"gelo/plan"
	"gelo/plan/planfile"
	"gelo/tokenizer"
)

// compilePlan compiles the model and writes a sealed plan file: the identity needs the
// weights, so they are loaded (and hashed, not copied).
func compilePlan(mf *modelFlags, out, tokFlag string, stderr io.Writer) error {
	o, err := mf.options()
	if err != nil {
		return err
	}
	if _, cfg, err := mf.resolve(); err != nil {
		return err
	} else if err := mf.preflight(cfg, nil, 0, 0, 0); err != nil {
		return err
	}
	model, err := mf.open(stderr)
	if err != nil {
		return err
	}
	defer model.Close()
	m, err := mf.compile(model.Source, model.Config, stderr)
	if err != nil {
		return err
	}
	warnInsecure(stderr, m)
	p, id, err := plan.Seal(m, model, o, tokFlag)
	if err != nil {
		return err
	}
	data, err := plan.Encode(p)
	if err != nil {
		return err
	}
	if err := writeAtomic(out, data); err != nil {
		return err
	}
	d := p.Digest()
	fmt.Fprintf(stderr, "wrote %s: plan %x, model identity %s, IR %s\n", out, d, id.Digest, p.IRDigest)
	return nil
}

// openSealed loads the model a sealed plan names (--model and --seed override its recorded
// source when given on the command line) and checks it against the sealed identity.
func openSealed(flags *flag.FlagSet, mf *modelFlags, path string, p *planfile.Plan, tokFlag string, stderr io.Writer) (*models.Model, *tokenizer.Tokenizer, error) {
	ov := plan.Overrides{Tokenizer: tokFlag}
	flags.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "model":
			ov.Model = mf.model
		case "seed":
			ov.Seed = &mf.seed
		}
	})
	var bar *progress
	ov.Progress = func(spec string, done, total int64) {
		if bar == nil {
			bar = newProgress(stderr, "load "+spec)
		}
		bar.update(done, total)
	}
	o, err := plan.OpenSealedTokenizer(path, p, ov)
	if bar != nil {
		bar.done()
	}
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(stderr, "sealed plan %s: model identity %s verified (weights, config, tokenizer, flags of %s)\n", path, o.Identity.Digest, o.Model.Spec)
	return o.Model, o.Tokenizer.Tok, nil
}

// printPlanHeader prints what a plan file holds apart from its IR, as comment lines.
func printPlanHeader(w io.Writer, path string, p *planfile.Plan) error {
	id, err := plan.Identity(path, p)
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
	fmt.Fprintf(w, "//     weights:      %s (%d tensors, %d bytes as %s)\n", id.Weights, len(id.Tensors), total, plan.TensorDType())
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
	switch s.Kind {
	case planfile.SourceVariant:
		fmt.Fprintf(&b, "variant %s, seed %d, synthesized as %s", s.Name, s.Seed, s.SynthDType)
	case planfile.SourceGGUF:
		fmt.Fprintf(&b, "GGUF file %s", s.Name)
	case planfile.SourceBuiltin:
		fmt.Fprintf(&b, "built-in model %s (embedded in the binary)", s.Name)
	default:
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
	ida, err := plan.Identity(pathA, a)
	if err != nil {
		return err
	}
	idb, err := plan.Identity(pathB, b)
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
	if err := checkOut(*out); err != nil {
		return err
	}
	nonce, err := parseNonce(*nonceHex)
	if err != nil {
		return err
	}
	p, id, err := plan.ReadSealed(pos[0])
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
	minSec := fs.String("min-security", "", "refuse a plan below this protection level: "+strings.Join(passes.LevelNames(), ", ")+" (insecure levels and custom rank lowest)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: gelo verify PLAN.gelo --evidence EVIDENCE --nonce HEX [--allow-simulated] [--measurement HEX] [--min-tcb ...] [--min-security LEVEL]")
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
	if *minSec != "" {
		if _, ok := passes.LookupLevel(*minSec); !ok {
			return fmt.Errorf("%w: --min-security %q: want %s", errUsage, *minSec, strings.Join(passes.LevelNames(), ", "))
		}
	}
	p, id, err := plan.ReadSealed(pos[0])
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
	level := cmp.Or(p.Passes.Security, passes.LevelCustom)
	if id.Flags != nil && id.Flags["security"] != p.Passes.Security {
		return fmt.Errorf("refused: the plan says security %q, its sealed identity %q", p.Passes.Security, id.Flags["security"])
	}
	pm, err := p.Module()
	if err != nil {
		return err
	}
	insecure := pm.Meta["insecure"]
	label := insecure
	if label == "" {
		label = "no attack of the harness breaks it"
	} else {
		label = "INSECURE: " + label
	}
	fmt.Fprintf(stdout, "security:       %s (%s)\n", level, label)
	if *minSec != "" {
		if passes.LevelRank(level) < passes.LevelRank(*minSec) || (insecure != "" && passes.LevelRank(*minSec) > 0) {
			return fmt.Errorf("refused: plan %s has security %s, below --min-security %s", pos[0], level, *minSec)
		}
		fmt.Fprintf(stdout, "min-security:   %s met\n", *minSec)
	}
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
