// Package attest binds a compiled plan and the model it was compiled for to an AMD SEV-SNP
// attestation report, and checks such a binding.
//
// It has four parts:
//
//   - Model identity (ComputeIdentity): a SHA-256 over the config.json bytes, every tensor's
//     name, dtype, shape and bytes in canonical order, the tokenizer file (when present) and
//     the flags that change numerics. The per-part digests and one digest per tensor are kept,
//     so that Identity.Compare can name what differs ("weights differ: tensor
//     model.layers.3.mlp.up_proj.weight: data differs").
//   - Sealing (ReportData): a SHA-512 over the plan digest, the identity digest and a fresh
//     nonce, which fills the 64-byte REPORT_DATA field of an attestation report.
//   - Evidence (Attester, Evidence): the raw report plus the VCEK, ASK and ARK certificates,
//     from the real /dev/sev-guest (or configfs-tsm) when the machine is an SEV-SNP guest, or
//     from a simulated device built on go-sev-guest's test-only signer. Simulated evidence is
//     always labelled as such, in the file and in every message about it.
//   - Verification (Verify, VerifySealed): the signature chain (AMD's embedded roots for real
//     evidence; the test root only when Policy.AllowSimulated), REPORT_DATA, and the guest
//     policy, TCB and measurement through go-sev-guest's validate package.
//
// # Framing
//
// Every hash input is a sequence of fields. A field is written as its length as an unsigned
// 64-bit big-endian integer followed by its bytes ("frame" below); integers are written as
// unsigned 64-bit big-endian values ("u64"), booleans as one byte 0 or 1. The first field of
// every hash is a domain-separation tag. With T = "gelo/model-identity/v1":
//
//	config    = SHA-256(frame(T+"/config") frame(config.json bytes))
//	tensor_i  = SHA-256(frame(T+"/tensor") frame(name) frame(dtype) u64(rank) u64(dim)...
//	                    u64(byte length) frame(SHA-256(tensor bytes)))
//	weights   = SHA-256(frame(T+"/weights") u64(n) frame(tensor_0) ... frame(tensor_n-1))
//	tokenizer = SHA-256(frame(T+"/tokenizer") byte(present) [frame(tokenizer bytes)])
//	flags     = SHA-256(frame(T+"/flags") u64(n) frame(key_0) frame(value_0) ...)   keys sorted
//	identity  = SHA-256(frame(T) frame(config) frame(weights) frame(tokenizer) frame(flags))
//
// and, with R = "gelo/report-data/v1":
//
//	REPORT_DATA = SHA-512(frame(R) frame(plan digest) frame(identity) frame(nonce))
//
// A tensor's bytes are hashed on their own first, so a tensor given as a stream of unknown
// length is framed as unambiguously as one given as a byte slice.
package attest
