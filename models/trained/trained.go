// Package trained holds the small model trained on the King James Bible
// (issue 51; tools/train made it, PROVENANCE.md says how), built into the
// binary so that gelo runs a model that writes text with no files around
// it. Its files are embedded as they are committed: package models reads
// them through the same safetensors, config and tokenizer code as any
// checkpoint directory (safetensors.OpenModelFS), and they hash to the
// same model identity as the directory models/trained.
//
// It is a package of its own because go:embed reaches only files in the
// package's directory and below.
package trained

import "embed"

// Name is the --model name the embedded model answers to.
const Name = "qwen3-kjv"

// Files are the checkpoint's files, at the root: config.json,
// model.safetensors (bf16), tokenizer.json and tokenizer_config.json.
//
//go:embed config.json model.safetensors tokenizer.json tokenizer_config.json
var Files embed.FS

// FileNames lists the embedded files.
var FileNames = []string{"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"}
