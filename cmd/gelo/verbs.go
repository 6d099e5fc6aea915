package main

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	lweest "gelo/attack/lwe"
	"gelo/ir"
	"gelo/models"
	"gelo/models/safetensors"
	"gelo/passes"
	"gelo/plan"
	"gelo/plan/planfile"
)

// resolve reads only the config of --model: compile needs no weights.
func (mf *modelFlags) resolve() (models.Source, *models.Config, error) {
	return models.Resolve(mf.model, mf.seed, "")
}

func runCompile(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("compile", flag.ContinueOnError)
	var mf modelFlags
	mf.register(fs)
	mf.registerProtect(fs)
	mf.registerDump(fs)
	out := fs.String("out", "", "write the compiled artifact here (default: stdout); a name ending in "+planfile.Ext+" gets a sealed plan file")
	tok := fs.String("tokenizer", "", "tokenizer.json, or a directory holding one, to bind into a plan's model identity (default: the model's own, if any: its directory's, its GGUF file's or the built-in model's)")
	if err := parseNoArgs(fs, args, stderr); err != nil {
		return err
	}
	if err := checkOut(*out); err != nil {
		return err
	}
	if plan.IsPlanName(*out) {
		return compilePlan(&mf, *out, *tok, stderr)
	}
	if *tok != "" {
		return fmt.Errorf("%w: --tokenizer applies only to a plan file (--out NAME%s)", errUsage, planfile.Ext)
	}
	src, cfg, err := mf.resolve()
	if err != nil {
		return err
	}
	m, err := mf.compile(src, cfg, stderr)
	if err != nil {
		return err
	}
	warnInsecure(stderr, m)
	text := ir.Print(m)
	if *out == "" {
		_, err = io.WriteString(stdout, text)
		return err
	}
	if err := writeAtomic(*out, []byte(text)); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s (%s)\n", *out, ir.Digest(m))
	return nil
}

// writeAtomic writes through a temporary file and a rename, so a failed
// write never leaves a partial file behind; it refuses to replace what is
// not a regular file (a device, a FIFO, a symbolic link).
func writeAtomic(path string, data []byte) error {
	return safetensors.WriteFileAtomic(path, data)
}

// readArtifact parses a compiled artifact.
func readArtifact(path string) (*ir.Module, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m, err := ir.Parse(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

func runInspect(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	var mf modelFlags
	mf.register(fs)
	mf.registerProtect(fs)
	mf.registerDump(fs)
	summaryOnly := fs.Bool("summary", false, "print only the summary, not the IR")
	lweEst := fs.Bool("lwe", false, "for an lwe plan, also print the estimated cost in bits of every lattice attack on its ciphertexts, one instance per input width (attack/lwe, MATZOV cost model; about 10 s a width)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: gelo inspect [flags] [ARTIFACT]   (IR text or a .gelo plan; no artifact: compile --model and inspect that)")
		fs.PrintDefaults()
	}
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	var m *ir.Module
	var err error
	switch fs.NArg() {
	case 0:
		src, cfg, err := mf.resolve()
		if err != nil {
			return err
		}
		if m, err = mf.compile(src, cfg, stderr); err != nil {
			return err
		}
	case 1:
		var p *planfile.Plan
		if m, p, err = plan.ReadArtifact(fs.Arg(0)); err != nil {
			return err
		}
		if p != nil {
			if err := printPlanHeader(stdout, fs.Arg(0), p); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("%w: inspect takes at most one artifact, got %d", errUsage, fs.NArg())
	}
	if !*summaryOnly {
		io.WriteString(stdout, ir.Print(m))
		io.WriteString(stdout, "\n")
	}
	fmt.Fprintf(stdout, "// digest: %s\n", ir.Digest(m))
	io.WriteString(stdout, commentLines(passes.Summarize(m).String()))
	io.WriteString(stdout, "// memory plans (arena per phase, at the bindings shown):\n")
	for _, g := range m.Graphs {
		defaults := map[string]int{"n": 128, "B": 1, "T": mf.maxContext}
		bind := map[string]int{}
		for _, p := range g.Params {
			if v, ok := defaults[p]; ok {
				bind[p] = v
			}
		}
		full, err := plan.BindShieldDims(g, bind)
		if err != nil {
			return err
		}
		plan, err := passes.PlanMemory(g, full)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "//   %s\n", plan)
	}
	io.WriteString(stdout, "// placement table:\n")
	io.WriteString(stdout, commentLines(passes.DefaultPolicy().String()))
	if *lweEst {
		return printLatticeEstimate(stdout, m)
	}
	return nil
}

// printLatticeEstimate prints attack/lwe's estimate for each instance an
// lwe plan makes: one per input width d_in of its crossings (A is d_in x
// lambda, shared by every row of that width: m = d_in samples).
func printLatticeEstimate(w io.Writer, m *ir.Module) error {
	if m.Meta["lwe"] == "" {
		return fmt.Errorf("%w: --lwe: the plan is --security %s, not lwe", errUsage, m.Meta["security"])
	}
	widths := map[int]bool{}
	var lambda, h int
	for _, g := range m.Graphs {
		for _, n := range g.Nodes {
			if n.Op != ir.OpLWEEncode {
				continue
			}
			l, _ := n.Attrs.Int("lambda")
			hh, _ := n.Attrs.Int("h")
			lambda, h = int(l), int(hh)
			if s := g.Node(n.Inputs[0]).Type.Shape; len(s) == 2 && !s[1].IsSym() {
				widths[s[1].Size] = true
			}
		}
	}
	if len(widths) == 0 {
		fmt.Fprintf(w, "// lwe estimate: nothing crosses (every op is TEE-local); the parameters are %s\n", m.Meta["lwe"])
		return nil
	}
	var reports []lweest.Report
	for _, d := range slices.Sorted(maps.Keys(widths)) {
		r, err := lweest.Estimate(lweest.Level(lambda, d, h), lweest.MATZOV{})
		if err != nil {
			return fmt.Errorf("lwe estimate at d_in %d: %w", d, err)
		}
		reports = append(reports, r)
	}
	fmt.Fprintf(w, "// lwe estimate (attack/lwe, MATZOV cost model; bits of each attack, m = d_in samples of one instance per width):\n")
	var b strings.Builder
	if err := lweest.WriteTable(&b, reports); err != nil {
		return err
	}
	io.WriteString(w, commentLines(b.String()))
	return nil
}

func commentLines(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("//   ")
		b.WriteString(line)
		b.WriteString("\n")
	}
	return b.String()
}

func runDiff(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("diff", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: gelo diff A B   (two compiled artifacts: IR text or .gelo plans)")
	}
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return fmt.Errorf("%w: diff takes two artifacts, got %d", errUsage, fs.NArg())
	}
	a, pa, err := plan.ReadArtifact(fs.Arg(0))
	if err != nil {
		return err
	}
	b, pb, err := plan.ReadArtifact(fs.Arg(1))
	if err != nil {
		return err
	}
	if err := writePlanDiff(stdout, fs.Arg(0), pa, fs.Arg(1), pb); err != nil {
		return err
	}
	changes := ir.Diff(a, b)
	if len(changes) == 0 {
		fmt.Fprintln(stdout, "no structural differences")
		return nil
	}
	io.WriteString(stdout, ir.FormatDiff(changes))
	return nil
}

func parseIDs(s string) ([]int32, error) { return parseIDsFlag("prompt-ids", s) }

// parseIDsFlag parses the comma-separated token ids of flag --name: each
// a non-negative integer, at least one.
func parseIDsFlag(name, s string) ([]int32, error) {
	var ids []int32
	for _, f := range splitList(s) {
		v, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("%w: --%s: %q is not a token id (a non-negative integer)", errUsage, name, f)
		}
		ids = append(ids, int32(v))
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("%w: --%s is empty", errUsage, name)
	}
	return ids, nil
}

// defaultPrompt is used when generate gets no prompt, so the README's
// main command runs with no input at all.
const defaultPrompt = "1,2,3,4,5,6,7,8"

// defaultText is generate's prompt when none is given and the model has a
// tokenizer: the opening of Genesis, which the built-in model (trained on
// the King James Bible) continues.
const defaultText = "In the beginning"

// warnInsecure says on stderr when a plan's protection is labelled
// insecure (mask none, or a family an attack of the harness breaks).
func warnInsecure(w io.Writer, m *ir.Module) {
	if why := m.Meta["insecure"]; why != "" {
		fmt.Fprintf(w, "INSECURE plan: %s\n", why)
	}
}
