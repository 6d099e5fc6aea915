package main

import (
	"flag"
	"fmt"
	"io"
	"time"

	"gelo/models"
)

// runSynth writes a pinned variant's deterministic synthetic weights in
// the Hugging Face layout.
func runSynth(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("synth", flag.ContinueOnError)
	variant := fs.String("variant", models.DefaultVariant, "pinned variant whose shapes to use "+fmt.Sprint(models.VariantNames()))
	seed := fs.Uint64("seed", 1, "seed of the weights (same seed, same bytes)")
	out := fs.String("out", "", "output directory (required)")
	dtype := fs.String("dtype", "bf16", "weight dtype in the file: bf16, f16 or f32")
	layers := fs.Int("layers", 0, "override num_hidden_layers (0: the variant's)")
	vocab := fs.Int("vocab", 0, "override vocab_size (0: the variant's)")
	if err := parseNoArgs(fs, args, stderr); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("%w: --out is required", errUsage)
	}
	cfg, err := models.Variant(*variant)
	if err != nil {
		return fmt.Errorf("%w: --variant: %v", errUsage, err)
	}
	if *layers < 0 || *vocab < 0 {
		return fmt.Errorf("%w: --layers and --vocab must not be negative", errUsage)
	}
	if *layers > 0 {
		cfg.NumHiddenLayers = *layers
	}
	if *vocab > 0 {
		cfg.VocabSize = *vocab
		cfg.BOSTokenID = min(cfg.BOSTokenID, *vocab-1)
		for i, id := range cfg.EOSTokenIDs {
			cfg.EOSTokenIDs[i] = min(id, *vocab-1)
		}
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%w: --layers/--vocab: %v", errUsage, err)
	}
	bar := newProgress(stderr, "synth "+*variant)
	start := time.Now()
	if err := models.WriteSynthetic(*out, cfg, *seed, *dtype, bar.update); err != nil {
		return err
	}
	bar.done()
	fmt.Fprintf(stdout, "wrote %s: %s, %d params, %s weights, seed %d, %v\n", *out, *variant, cfg.ParamCount(), *dtype, *seed,
		time.Since(start).Round(time.Millisecond))
	return nil
}
