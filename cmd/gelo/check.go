package main

// Flag checks that turn silently ignored input into usage errors, and the
// finish line that makes a truncated generation say so.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"gelo/formats"
	"gelo/ir"
	"gelo/models"
	"gelo/models/safetensors"
	"gelo/passes"
	"gelo/plan"
	"gelo/plan/planfile"
	"gelo/runtime"
)

// parseNoArgs parses a verb that takes no positional arguments: a stray
// word (which would end flag parsing and drop every flag after it) is a
// usage error naming it.
func parseNoArgs(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q (gelo %s takes flags only; flags after it were not read)", errUsage, fs.Arg(0), fs.Name())
	}
	return nil
}

// planDecides are the flags whose value a compiled artifact fixes: given
// with --plan they would be ignored.
var planDecides = []string{"mask", "cadence", "shield", "center", "topology", "weights", "kv-dtype", "no-fuse", "dump-after", "dump-all"}

// checkPlanOverrides refuses the compile flags given together with --plan.
func checkPlanOverrides(fs *flag.FlagSet) error {
	var set []string
	fs.Visit(func(f *flag.Flag) {
		for _, n := range planDecides {
			if f.Name == n {
				set = append(set, "--"+n)
			}
		}
	})
	if len(set) > 0 {
		return fmt.Errorf("%w: %s: the plan given with --plan fixes these (recompile to change them)", errUsage, strings.Join(set, ", "))
	}
	return nil
}

// isSet reports whether the flag was given on the command line (an empty
// value included).
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// checkPromptFlags refuses empty prompts (rather than a default one) and
// chat-only flags without --chat.
func checkPromptFlags(fs *flag.FlagSet) error {
	for _, n := range []string{"prompt-ids", "prompt", "chat"} {
		if isSet(fs, n) && fs.Lookup(n).Value.String() == "" {
			return fmt.Errorf("%w: --%s is empty", errUsage, n)
		}
	}
	if !isSet(fs, "chat") {
		for _, n := range []string{"system", "think", "chat-raw"} {
			if isSet(fs, n) {
				return fmt.Errorf("%w: --%s applies only with --chat", errUsage, n)
			}
		}
	}
	return nil
}

// finishText says why a generation stopped; a cut at the context names
// the flag that moves it.
func finishText(c runtime.Completion, maxTokens, maxContext int) string {
	switch {
	case c.ContextFull:
		return fmt.Sprintf("finish reason %s: the context of %d tokens is full after %d new tokens (raise --max-context)", c.Finish, maxContext, len(c.Tokens))
	case c.Finish == runtime.FinishLength:
		return fmt.Sprintf("finish reason %s: --max-tokens %d reached", c.Finish, maxTokens)
	case c.Finish == runtime.FinishStop:
		return fmt.Sprintf("finish reason %s: end of sequence", c.Finish)
	}
	return "finish reason: none (interrupted)"
}

// preflight refuses, before anything loads, a run the flags make
// impossible (exit 2) or larger than the memory limit (exit 1): see
// plan.Preflight. m is the artifact given with --plan (nil: compiled from
// the flags); sequences 0 checks the weights alone.
func (mf *modelFlags) preflight(cfg *models.Config, m *ir.Module, sequences, promptLen, maxTokens int) error {
	r := plan.Run{Config: cfg, Sequences: sequences, MaxContext: mf.maxContext, MaxTokens: maxTokens,
		PromptLen: promptLen, Workers: mf.workers, Weights: formats.F32}
	if mf.maxMemory != "" {
		var err error
		if r.Limit, err = plan.ParseBytes(mf.maxMemory); err != nil {
			return fmt.Errorf("%w: --max-memory: %v", errUsage, err)
		}
	}
	if m != nil {
		if w := m.Meta["weights"]; w != "" {
			r.Weights = w
		}
		r.KVDType = m.Meta["kv_dtype"]
		if sh := m.Meta["shield"]; sh != "" {
			r.ShieldK, _, _ = plan.ParseShield(sh)
		}
	} else {
		if mf.weights != "" {
			r.Weights = mf.weights
		}
		r.KVDType = mf.kvDType
		if mf.shield != "" {
			k, _, err := plan.ParseShield(mf.shield)
			if err != nil {
				return fmt.Errorf("%w: %v", errUsage, err)
			}
			r.ShieldK = k
		}
	}
	level := mf.security
	if m != nil {
		level = m.Meta["security"]
	}
	if l, ok := passes.LookupLevel(level); ok && l.FullSpan {
		// A full-span stack carries as many shield rows as its width.
		r.ShieldK = max(r.ShieldK, cfg.HiddenSize, cfg.IntermediateSize)
	}
	if l, ok := passes.LookupLevel(level); ok && l.Lattice() && mf.latticeOffloads(m) {
		r.LWE = l.LWE // hints, integers, pads: counted as if every op crossed
	}
	_, err := plan.Preflight(r)
	if errors.Is(err, plan.ErrPreflight) {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return err
}

// promptShape is the batch size and the longest prompt of --prompt-ids
// (a bad list is reported when it is parsed).
func promptShape(ids string) (sequences, longest int) {
	if ids == "" {
		ids = defaultPrompt
	}
	parts := strings.Split(ids, ";")
	for _, p := range parts {
		longest = max(longest, len(splitList(p)))
	}
	return len(parts), longest
}

// runConfig is the config a run will load, read before the weights: the
// sealed plan's (what is loaded must hash to it), else --model's.
func runConfig(mf *modelFlags, sealed *planfile.Plan, path string) (*models.Config, error) {
	if sealed != nil {
		return models.ParseConfig("plan "+path, sealed.Config)
	}
	_, cfg, err := mf.resolve()
	return cfg, err
}

// checkOut refuses, before any work, an --out that the write would
// wrongly replace (a device, a FIFO, a symbolic link): see
// safetensors.Replaceable.
func checkOut(path string) error {
	if path == "" {
		return nil
	}
	if err := safetensors.Replaceable(path); err != nil {
		return fmt.Errorf("%w: --out: %v", errUsage, err)
	}
	return nil
}

// maxPromptFile bounds --prompt-file (far beyond any context).
const maxPromptFile = 64 << 20

// readPromptFile reads --prompt-file ('-': standard input); an empty or
// oversized file is an error naming it.
func readPromptFile(path string) (string, error) {
	var r io.Reader
	name := path
	if path == "-" {
		r, name = os.Stdin, "standard input"
	} else {
		f, err := os.Open(path)
		if err != nil {
			return "", fmt.Errorf("--prompt-file: %w", err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxPromptFile+1))
	if err != nil {
		return "", fmt.Errorf("--prompt-file %s: %w", name, err)
	}
	if len(data) > maxPromptFile {
		return "", fmt.Errorf("%w: --prompt-file %s is larger than %d bytes", errUsage, name, maxPromptFile)
	}
	if len(data) == 0 {
		return "", fmt.Errorf("%w: --prompt-file %s is empty", errUsage, name)
	}
	return string(data), nil
}

// latticeOffloads reports whether an lwe plan may send work to the device,
// so that the preflight counts its lwe state: the artifact's own graphs
// when one is given, else --offload all or an accelerator (on the local
// device, the TEE's own cores, the offload pass keeps every op in the TEE).
func (mf *modelFlags) latticeOffloads(m *ir.Module) bool {
	if m != nil {
		for _, g := range m.Graphs {
			for _, n := range g.Nodes {
				if n.Op == ir.OpLWEEncode {
					return true
				}
			}
		}
		return false
	}
	return mf.offload == "all" || mf.accelerated()
}

// accelerated reports whether --device names an accelerator rather than
// the local device (the TEE's own cores).
func (mf *modelFlags) accelerated() bool { return mf.device != "" && mf.device != "local" }
