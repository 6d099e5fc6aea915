package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"strings"

	"gelo/models/safetensors"
	"gelo/plan"
)

// runExport writes a loaded model (a Hugging Face directory, a built-in
// variant's synthetic weights, or a GGUF file) as a GGUF file, so gelo's
// models run in llama.cpp for cross-checks.
func runExport(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	var mf modelFlags
	mf.register(fs)
	out := fs.String("gguf", "", "write the model here as a GGUF file (required)")
	typ := fs.String("type", "f32", "tensor type of the matrices: "+strings.Join(plan.GGUFTypes(), ", ")+" (vectors stay f32)")
	tokPath := fs.String("tokenizer", "", "tokenizer.json, or a directory holding one, to write as tokenizer.ggml.* (default: the model's own, if any)")
	if err := parseNoArgs(fs, args, stderr); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("%w: --gguf is required", errUsage)
	}
	if err := safetensors.Replaceable(*out); err != nil {
		return fmt.Errorf("%w: --gguf: %v", errUsage, err)
	}
	m, err := mf.open(stderr)
	if err != nil {
		return err
	}
	defer m.Close()
	tok, err := plan.ModelTokenizer(*tokPath, m)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := plan.ExportGGUF(m, tok, *typ, &buf); err != nil {
		if strings.Contains(err.Error(), "--type") {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		return err
	}
	if err := safetensors.WriteFileAtomic(*out, buf.Bytes()); err != nil {
		return err
	}
	tokNote := "no tokenizer"
	if tok.Bytes != nil {
		tokNote = "tokenizer " + tok.Path
	}
	fmt.Fprintf(stdout, "wrote %s: %s as GGUF, %s matrices, %s, %d bytes\n", *out, m.Spec, *typ, tokNote, buf.Len())
	return nil
}
