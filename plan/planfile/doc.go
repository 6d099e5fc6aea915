// Package planfile reads and writes sealed plan files (".gelo"): everything a TEE needs to
// run one compiled model, and nothing it could take on trust. A plan file holds the model
// identity (weights bound by hash, never copied), the model source, the config.json bytes,
// the pass configuration, the backend, the digest of every compiled phase and the lowered
// program itself (the canonical IR text, which the cpu backend executes), followed by a
// SHA-256 over all of it: the plan digest that attestation binds into REPORT_DATA.
//
// The same inputs give a byte-identical file: there are no timestamps, the JSON sections are
// written in one canonical form (struct fields in a fixed order, no insignificant space, map
// keys sorted) and Decode refuses any other form, so Encode(Decode(b)) == b for every b that
// Decode accepts.
//
// # Format, version 1
//
// All integers are unsigned big-endian. A file is a fixed header, a section table, the
// section bodies in table order, and a trailer:
//
//	offset      size  field
//	0           8     magic "GELOPLAN"
//	8           4     format version (1)
//	12          4     section count (4 in version 1)
//	16          48*4  section table; per entry:
//	                    8   section name, ASCII, NUL-padded
//	                    8   body length in bytes
//	                    32  SHA-256 of the body
//	208         ...   section bodies, concatenated in table order, no padding
//	len-32      32    trailer: SHA-256 of every byte before it (the plan digest)
//
// Version 1 has exactly these sections, in this order:
//
//	name      content
//	meta      canonical JSON (below): backend, model source, pass configuration, digests
//	identity  the model identity: attest.Identity as canonical JSON (encoding/json of the
//	          struct, compact). This package treats it as opaque apart from checking that it
//	          is a JSON object whose "digest" member equals meta.identity_digest; package plan
//	          decodes and validates it with package attest (which this package does not
//	          import, so that attest may depend on the runtime).
//	config    the model's config.json, byte for byte (for a built-in variant: the variant's
//	          config as models.Config.JSON writes it); it must parse as a valid config
//	ir        the lowered program: ir.Print of the compiled module (header, digest line,
//	          meta, one graph per phase), in canonical printed form
//
// The meta section is one JSON object with these members, in this order:
//
//	member                 type      meaning
//	backend                string    backend the program is lowered for ("cpu")
//	source                 object    where the weights come from (not part of the identity):
//	  .kind                string      "variant" (synthesized in memory) or "dir" (HF layout)
//	  .name                string      variant name, or the directory as given to --model
//	  .seed                uint64      synthetic seed (variant); 0 for a directory
//	  .synth_dtype         string      dtype the synthetic weights are rounded through
//	                                   (variant, e.g. "bf16"); "" for a directory
//	  .tokenizer           string      path of the tokenizer file hashed into the identity,
//	                                   "" when none
//	passes                 object    the pass configuration:
//	  .pipeline            []string    pass names in the order they ran (IR meta "passes")
//	  .mask                string      none | haar | hd3
//	  .cadence             string      per-forward | per-offload
//	  .topology            string      batched-decode mask topology (per-sequence | shared)
//	  .shield_k            int         minimum shield rows
//	  .shield_energy       string      shield energy, strconv 'g' shortest form ("4")
//	  .center              bool        mean-centering of multi-row crossings
//	  .fusions             []string    fusions applied, in order (IR meta "fusions"; empty when
//	                                   none; always present)
//	  .weight_format       string      format of the device matmul weights (IR meta "weights":
//	                                   f32, bf16, q8_0, q4_0, q4_k; derived at lowering from the f32
//	                                   weights the identity hashes)
//	identity_digest        string    64 hex digits: the identity section's "digest"
//	ir_digest              string    ir.Digest of the module ("sha256:" + 64 hex)
//	phases                 []object  one per graph, in module order:
//	  .name                string      graph name (prefill, decode)
//	  .digest              string      ir.GraphDigest of that graph
//
// # Checks
//
// Decode checks, in order, and names the section and field of the first failure: the magic,
// the version, the section count and names, that every section lies within the file and
// that no bytes are left over (truncation, trailing data), each body's SHA-256 against the
// table ("section ir: digest mismatch: header says ..., body hashes to ..."), the trailer,
// then the content: meta is canonical JSON with valid values; identity is a JSON object
// with the recorded digest; config parses and validates; the IR parses (which checks its
// own digest line), is in canonical form, hashes to meta.ir_digest, has exactly the phases
// meta lists with the recorded graph digests, and its meta (model, seed, passes, fusions,
// weights, mask, cadence, shield, center, topology) agrees with the meta section.
//
// A file that passes is internally consistent; it is not thereby trusted. Trust comes from
// attestation evidence that binds the plan digest (Plan.Digest) and from recomputing the
// model identity from the weights before running (package plan does both).
package planfile
