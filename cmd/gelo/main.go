// Command gelo compiles a decoder LLM into a plan for confidential
// inference and runs it. Each verb is thin: it parses flags and calls the
// packages that do the work.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

type verb struct {
	name, summary string
	run           func(args []string, stdout, stderr io.Writer) error
}

func verbs() []verb {
	return []verb{
		{"compile", "model -> IR -> passes -> compiled artifact (IR text of prefill and decode)", runCompile},
		{"inspect", "print a compiled artifact (or the default model's IR) with a summary", runInspect},
		{"diff", "structural diff of two compiled artifacts", runDiff},
		{"generate", "prefill + greedy decode, tokens streamed as they are sampled", runGenerate},
		{"perplexity", "perplexity of a text in windows (llama-perplexity's rule); --kl-base: KL and top-1 against a saved base run", runPerplexity},
		{"replay", "capture a decode step once, replay it N times, prove it bit-identical to eager", runReplay},
		{"synth", "write a deterministic synthetic model in the Hugging Face layout", runSynth},
		{"export", "write a model (directory, variant or GGUF) as a GGUF file for llama.cpp", runExport},
		{"bench", "prefill and decode tok/s against the machine's bandwidth bound", runBench},
		{"record", "run generation with the device spied and write every payload it saw (safetensors)", runRecord},
		{"attack", "record every protection condition on a corpus and attack what the device saw", runAttack},
		{"attest", "SEV-SNP evidence binding a sealed plan to a nonce (--simulated off SEV-SNP hardware)", runAttest},
		{"verify", "check a sealed plan and its attestation evidence (nonce, signature chain, policy)", runVerify},
		{"serve", "OpenAI-compatible server with continuous batching and attested TLS", runServe},
		{"chat", "attest a gelo server's connection, then chat with it (--server URL)", runChat},
	}
}

// errUsage marks errors that come from bad flags (exit status 2).
var errUsage = errors.New("usage")

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, v := range verbs() {
		if v.name == args[0] {
			if err := v.run(args[1:], stdout, stderr); err != nil {
				if errors.Is(err, flag.ErrHelp) {
					return 0
				}
				fmt.Fprintf(stderr, "gelo %s: %v\n", v.name, err)
				if errors.Is(err, errUsage) {
					return 2
				}
				return 1
			}
			return 0
		}
	}
	fmt.Fprintf(stderr, "gelo: unknown verb %q\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: gelo VERB [flags]   (gelo VERB -h for a verb's flags)")
	for _, v := range verbs() {
		fmt.Fprintf(w, "  %-9s %s\n", v.name, v.summary)
	}
}

// parse parses a verb's flags; a bad flag is a usage error.
func parse(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return noEmptyFlags(fs)
}

// noEmptyFlags refuses a flag given with an empty value (--mask "",
// --security ""): it would otherwise read as the flag left out, or as a
// knob set to nothing, and an expert knob set at all makes the protection
// level custom, so an empty value could lower the level silently.
func noEmptyFlags(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		if err == nil && f.Value.String() == "" {
			err = fmt.Errorf("%w: --%s is empty (give it a value, or leave it out for its default)", errUsage, f.Name)
		}
	})
	return err
}
