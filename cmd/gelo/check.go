package main

// Flag checks that turn silently ignored input into usage errors, and the
// finish line that makes a truncated generation say so.

import (
	"flag"
	"fmt"
	"io"
	"strings"

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
var planDecides = []string{"mask", "cadence", "shield", "center", "topology", "weights", "no-fuse", "dump-after", "dump-all"}

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
		for _, n := range []string{"system", "think"} {
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
