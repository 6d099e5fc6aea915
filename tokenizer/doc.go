// Package tokenizer implements the byte-level BPE tokenizer used by Qwen3
// (and other GPT-2 style models) from a Hugging Face tokenizer.json and
// tokenizer_config.json, with no Python or Rust dependency.
//
// Supported tokenizer.json features:
//
//   - model.type "BPE" with rank-ordered merges in either the "a b" string form
//     or the ["a", "b"] pair form, optional ignore_merges and unk_token;
//   - normalizer null, NFC, NFD, NFKC, NFKD or a Sequence of those;
//   - pre_tokenizer ByteLevel (GPT-2 regex or not), Split with a Regex pattern
//     (behaviour Isolated or Removed), or a Sequence of those; the Qwen2/Qwen3
//     split pattern is run by a hand-written scanner that is tested to be
//     equivalent to the regular expression, other patterns use regexp2;
//   - added tokens (special or not) with their lstrip, rstrip, single_word and
//     normalized flags, matched leftmost-longest before pre-tokenization;
//   - post_processor null, ByteLevel or TemplateProcessing (single sequence);
//   - decoder ByteLevel.
//
// Invalid UTF-8 in the input to Encode is not an error: each invalid byte is
// treated as a one-byte "other symbol" character by the pre-tokenizer and is
// encoded through its byte-level token, so DecodeBytes(Encode(s)) returns the
// normalized input byte for byte. Decode, like Hugging Face's decoder,
// returns valid UTF-8 and replaces each maximal invalid subsequence by
// U+FFFD.
//
// A Tokenizer is safe for concurrent use.
package tokenizer
