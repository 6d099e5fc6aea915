package plan

import (
	"slices"

	"gelo/models"
	"gelo/tokenizer"
)

// EOS is the end-of-sequence ids a generation stops at: the config's
// eos_token_id list, then the tokenizer's eos token when it has one and
// the config does not list it (a fresh slice: the config is not touched).
// generate and serve both stop where this says.
func EOS(cfg *models.Config, tk *tokenizer.Tokenizer) []int {
	eos := slices.Clone([]int(cfg.EOSTokenIDs))
	if tk != nil {
		if id, ok := tk.EOSTokenID(); ok && !slices.Contains(eos, id) {
			eos = append(eos, id)
		}
	}
	return eos
}
