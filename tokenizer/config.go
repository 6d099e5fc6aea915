package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Config holds the fields of tokenizer_config.json that matter for
// tokenization and chat formatting.
type Config struct {
	ChatTemplate              string   // the default chat template (Jinja source)
	BOSToken                  string   // "" when null or absent
	EOSToken                  string   // "" when null or absent
	PadToken                  string   // "" when null or absent
	UnkToken                  string   // "" when null or absent
	AddBOSToken               bool     // add_bos_token
	AddEOSToken               bool     // add_eos_token
	AddPrefixSpace            bool     // add_prefix_space
	SplitSpecialTokens        bool     // split_special_tokens
	CleanUpTokenizationSpaces bool     // clean_up_tokenization_spaces
	ModelMaxLength            int64    // model_max_length, 0 when absent or not an integer
	TokenizerClass            string   // tokenizer_class
	AdditionalSpecialTokens   []string // additional_special_tokens
}

type rawConfig struct {
	ChatTemplate              json.RawMessage   `json:"chat_template"`
	BOSToken                  json.RawMessage   `json:"bos_token"`
	EOSToken                  json.RawMessage   `json:"eos_token"`
	PadToken                  json.RawMessage   `json:"pad_token"`
	UnkToken                  json.RawMessage   `json:"unk_token"`
	AddBOSToken               *bool             `json:"add_bos_token"`
	AddEOSToken               *bool             `json:"add_eos_token"`
	AddPrefixSpace            *bool             `json:"add_prefix_space"`
	SplitSpecialTokens        *bool             `json:"split_special_tokens"`
	CleanUpTokenizationSpaces *bool             `json:"clean_up_tokenization_spaces"`
	ModelMaxLength            json.RawMessage   `json:"model_max_length"`
	TokenizerClass            *string           `json:"tokenizer_class"`
	AdditionalSpecialTokens   []json.RawMessage `json:"additional_special_tokens"`
}

// ParseConfig reads the contents of a tokenizer_config.json.
func ParseConfig(data []byte) (Config, error) {
	c, err := parseConfig(data)
	if err != nil {
		var fe *fileError
		if errors.As(err, &fe) {
			return c, err
		}
		return c, &fileError{"tokenizer_config.json", "", err}
	}
	return c, nil
}

func parseConfig(data []byte) (Config, error) {
	var c Config
	var r rawConfig
	if err := json.Unmarshal(data, &r); err != nil {
		return c, err
	}
	ferr := func(field string, err error) error { return &fileError{"tokenizer_config.json", field, err} }
	var err error
	if c.ChatTemplate, err = parseChatTemplate(r.ChatTemplate); err != nil {
		return c, ferr("chat_template", err)
	}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		dst  *string
	}{
		{"bos_token", r.BOSToken, &c.BOSToken},
		{"eos_token", r.EOSToken, &c.EOSToken},
		{"pad_token", r.PadToken, &c.PadToken},
		{"unk_token", r.UnkToken, &c.UnkToken},
	} {
		if *f.dst, err = parseTokenField(f.raw); err != nil {
			return c, ferr(f.name, err)
		}
	}
	for i, a := range r.AdditionalSpecialTokens {
		s, err := parseTokenField(a)
		if err != nil {
			return c, ferr(fmt.Sprintf("additional_special_tokens[%d]", i), err)
		}
		c.AdditionalSpecialTokens = append(c.AdditionalSpecialTokens, s)
	}
	b := func(p *bool) bool { return p != nil && *p }
	c.AddBOSToken = b(r.AddBOSToken)
	c.AddEOSToken = b(r.AddEOSToken)
	c.AddPrefixSpace = b(r.AddPrefixSpace)
	c.SplitSpecialTokens = b(r.SplitSpecialTokens)
	c.CleanUpTokenizationSpaces = b(r.CleanUpTokenizationSpaces)
	if r.TokenizerClass != nil {
		c.TokenizerClass = *r.TokenizerClass
	}
	if !isNull(r.ModelMaxLength) {
		// Often a huge float such as 1e30 meaning "no limit": keep 0 then.
		var n int64
		if json.Unmarshal(r.ModelMaxLength, &n) == nil {
			c.ModelMaxLength = n
		}
	}
	return c, nil
}

// parseTokenField accepts null, a string, or an AddedToken object with a
// "content" field.
func parseTokenField(r json.RawMessage) (string, error) {
	if isNull(r) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(r, &s); err == nil {
		return s, nil
	}
	var o struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(r, &o); err != nil || o.Content == nil {
		return "", errors.New("want a string, null or an object with a \"content\" string")
	}
	return *o.Content, nil
}

// parseChatTemplate accepts a string or a list of {"name", "template"}
// objects, from which it takes the one named "default" (or the first).
func parseChatTemplate(r json.RawMessage) (string, error) {
	if isNull(r) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(r, &s); err == nil {
		return s, nil
	}
	var list []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(r, &list); err != nil {
		return "", errors.New("want a string or a list of {name, template} objects")
	}
	for _, e := range list {
		if e.Name == "default" {
			return e.Template, nil
		}
	}
	if len(list) > 0 {
		return list[0].Template, nil
	}
	return "", nil
}
