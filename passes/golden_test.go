package passes_test

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gelo/ir"
	"gelo/passes"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/<pass>/ from what the passes print")

// TestGolden runs each pass alone over the inputs in testdata/<pass>/ and
// compares what it prints byte for byte with the golden files beside them,
// the way go/printer and gofmt test themselves: a change in a pass's output
// shows as a diff of two small files (go test ./passes -update rewrites
// them; read that diff before committing it).
//
// NAME.in.ir is an IR module (the traced ones come from
// testdata/trace-inputs.sh, the others are written by hand to show one
// rule). Its header comments say how to run the pass, one line a run:
//
//	// run: mask=haar cadence=per-offload     -> NAME.out.ir or NAME.err
//	// run RUN: no-fuse=swiglu                -> NAME.RUN.out.ir or NAME.RUN.err
//
// A word with "=" is an option (mask, cadence, shield=K,E, center,
// topology, weights, no-fuse=a,b or all; unset ones take the defaults);
// other words describe the run. No run line means one run with the
// defaults. A run that must fail has its error text in a .err golden
// instead of an .out.ir.
func TestGolden(t *testing.T) {
	dirs, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	pipeline := passes.Pipeline(passes.DefaultProtect()).Names()
	seen := map[string]bool{}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		if !slices.Contains(pipeline, d.Name()) {
			t.Errorf("testdata/%s: no such pass (passes: %s)", d.Name(), strings.Join(pipeline, ", "))
			continue
		}
		seen[d.Name()] = true
		ins, err := filepath.Glob(filepath.Join("testdata", d.Name(), "*.in.ir"))
		if err != nil {
			t.Fatal(err)
		}
		if len(ins) == 0 {
			t.Errorf("testdata/%s has no .in.ir inputs", d.Name())
		}
		for _, in := range ins {
			runGoldenFile(t, d.Name(), in)
		}
	}
	for _, p := range pipeline {
		if !seen[p] {
			t.Errorf("pass %s has no golden tests (testdata/%s/*.in.ir)", p, p)
		}
	}
	checkNoStrayGoldens(t)
}

// goldenRun is one `// run` line of an input.
type goldenRun struct {
	name string
	opts passes.ProtectOptions
	off  []string
}

func runGoldenFile(t *testing.T, pass, in string) {
	src, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := goldenRuns(string(src))
	if err != nil {
		t.Errorf("%s: %v", in, err)
		return
	}
	base := strings.TrimSuffix(in, ".in.ir")
	for _, r := range runs {
		stem := base
		if r.name != "" {
			stem += "." + r.name
		}
		t.Run(strings.TrimPrefix(stem, "testdata"+string(filepath.Separator)), func(t *testing.T) {
			m, err := ir.Parse(string(src))
			if err != nil {
				t.Fatalf("%s: %v", in, err)
			}
			p, err := passNamed(pass, r)
			if err != nil {
				t.Fatalf("%s: %v", in, err)
			}
			// The manager validates the input and the output, as in a compile.
			err = (&passes.Manager{Passes: []passes.Pass{p}}).Run(m)
			got, ext, stale := "", ".out.ir", ".err"
			if err != nil {
				got, ext, stale = err.Error()+"\n", ".err", ".out.ir"
			} else {
				got = ir.Print(m)
			}
			golden := stem + ext
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Remove(stem + stale); err != nil && !errors.Is(err, fs.ErrNotExist) {
					t.Fatal(err)
				}
				return
			}
			want, rerr := os.ReadFile(golden)
			if rerr != nil {
				if _, serr := os.Stat(stem + stale); serr == nil {
					if ext == ".err" {
						t.Fatalf("pass %s on %s: want the output in %s%s, the pass failed:\n%s", pass, in, stem, stale, got)
					}
					t.Fatalf("pass %s on %s: want the error in %s%s, the pass succeeded", pass, in, stem, stale)
				}
				t.Fatalf("pass %s on %s: no golden %s (go test ./passes -update writes it)", pass, in, golden)
			}
			if got != string(want) {
				t.Errorf("pass %s on %s: output differs from %s (go test ./passes -update accepts it):\n%s",
					pass, in, golden, lineDiff(golden, string(want), got))
			}
		})
	}
}

// passNamed takes the pass called name from the standard pipeline built
// with r's options, so the golden tests run exactly what a compile runs.
func passNamed(name string, r goldenRun) (passes.Pass, error) {
	pm := passes.Pipeline(r.opts, r.off...)
	for _, p := range pm.Passes {
		if p.Name == name {
			return p, nil
		}
	}
	return passes.Pass{}, fmt.Errorf("no pass %q in the pipeline (%s)", name, strings.Join(pm.Names(), ", "))
}

// goldenRuns reads the `// run` header lines of an input.
func goldenRuns(src string) ([]goldenRun, error) {
	var runs []goldenRun
	names := map[string]bool{}
	for i, line := range strings.Split(src, "\n") {
		rest, ok := strings.CutPrefix(line, "// run")
		if !ok {
			continue
		}
		head, spec, ok := strings.Cut(rest, ":")
		name := strings.TrimSpace(head)
		if !ok || (head != "" && head[0] != ' ') || strings.ContainsAny(name, " \t./") {
			return nil, fmt.Errorf("line %d: want `// run: OPTIONS` or `// run NAME: OPTIONS`, got %q", i+1, line)
		}
		if names[name] {
			return nil, fmt.Errorf("line %d: run %q is given twice", i+1, name)
		}
		names[name] = true
		r := goldenRun{name: name, opts: passes.DefaultProtect()}
		for _, w := range strings.Fields(spec) {
			k, v, ok := strings.Cut(w, "=")
			if !ok {
				continue // a word describing the run
			}
			if err := r.set(k, v); err != nil {
				return nil, fmt.Errorf("line %d: %s: %w", i+1, w, err)
			}
		}
		runs = append(runs, r)
	}
	if len(runs) == 0 {
		runs = []goldenRun{{opts: passes.DefaultProtect()}}
	}
	return runs, nil
}

func (r *goldenRun) set(k, v string) error {
	switch k {
	case "mask":
		r.opts.Mask = v
	case "cadence":
		r.opts.Cadence = v
	case "topology":
		r.opts.Topology = v
	case "weights":
		r.opts.Weights = v
	case "center":
		b, err := strconv.ParseBool(v)
		if err != nil {
			return err
		}
		r.opts.Center = b
	case "shield":
		ks, es, ok := strings.Cut(v, ",")
		k, err1 := strconv.Atoi(ks)
		e, err2 := strconv.ParseFloat(es, 64)
		if !ok || err1 != nil || err2 != nil {
			return fmt.Errorf("want shield=K,ENERGY")
		}
		r.opts.ShieldK, r.opts.ShieldEnergy = k, e
	case "no-fuse":
		if v == "all" {
			r.off = passes.Unfused()
		} else {
			r.off = strings.Split(v, ",")
		}
	default:
		return fmt.Errorf("unknown option %q (mask, cadence, shield, center, topology, weights, no-fuse)", k)
	}
	return nil
}

// checkNoStrayGoldens fails on a golden file no input and run produces (a
// renamed input or run leaves one behind).
func checkNoStrayGoldens(t *testing.T) {
	want := map[string]bool{}
	ins, _ := filepath.Glob(filepath.Join("testdata", "*", "*.in.ir"))
	for _, in := range ins {
		src, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		runs, err := goldenRuns(string(src))
		if err != nil {
			continue // reported by the run itself
		}
		for _, r := range runs {
			stem := strings.TrimSuffix(in, ".in.ir")
			if r.name != "" {
				stem += "." + r.name
			}
			want[stem+".out.ir"], want[stem+".err"] = true, true
		}
	}
	for _, pat := range []string{"*.out.ir", "*.err"} {
		files, _ := filepath.Glob(filepath.Join("testdata", "*", pat))
		for _, f := range files {
			if want[f] {
				continue
			}
			if *update {
				if err := os.Remove(f); err != nil {
					t.Error(err)
				}
				continue
			}
			t.Errorf("%s: no input and run produces it (go test ./passes -update removes it)", f)
		}
	}
}

// lineDiff prints the region where got departs from want as a unified
// diff hunk: the common lines before and after are cut to a few of
// context, and long runs of changed lines are elided.
func lineDiff(name, want, got string) string {
	lines := func(s string) []string {
		l := strings.SplitAfter(s, "\n")
		if l[len(l)-1] == "" {
			l = l[:len(l)-1]
		}
		return l
	}
	a, b := lines(want), lines(got)
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	const ctx, maxLines = 3, 12
	c0 := max(0, pre-ctx)
	c1 := min(suf, ctx)
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- %s (golden)\n+++ %s (pass output)\n", name, name)
	fmt.Fprintf(&sb, "@@ -%d,%d +%d,%d @@\n", c0+1, len(a)-suf+c1-c0, c0+1, len(b)-suf+c1-c0)
	line := func(prefix, s string) {
		sb.WriteString(prefix)
		sb.WriteString(strings.TrimSuffix(s, "\n"))
		sb.WriteString("\n")
	}
	for _, s := range a[c0:pre] {
		line(" ", s)
	}
	for _, side := range []struct {
		prefix string
		lines  []string
	}{{"-", a[pre : len(a)-suf]}, {"+", b[pre : len(b)-suf]}} {
		for i, s := range side.lines {
			if i == maxLines {
				fmt.Fprintf(&sb, "%s... (%d more lines)\n", side.prefix, len(side.lines)-maxLines)
				break
			}
			line(side.prefix, s)
		}
	}
	for _, s := range a[len(a)-suf : len(a)-suf+c1] {
		line(" ", s)
	}
	return sb.String()
}
