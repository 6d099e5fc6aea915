package models_test

import (
	"testing"

	"gelo/models"
)

// FuzzParseConfig: config.json parsing refuses or returns a config that
// validates, stays within the bounds, and round-trips through JSON.
func FuzzParseConfig(f *testing.F) {
	for _, v := range models.VariantNames() {
		c, _ := models.Variant(v)
		f.Add(c.JSON())
	}
	f.Add([]byte(`{"model_type":"qwen3","num_hidden_layers":1099511627776}`))
	f.Add([]byte(`{"a":1,"a":2}`))
	f.Add([]byte(`{} {}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := models.ParseConfig("fuzz", data)
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("parsed but invalid: %v", err)
		}
		if n := c.ParamCount(); n <= 0 || n > models.MaxParams {
			t.Fatalf("%d parameters accepted", n)
		}
		again, err := models.ParseConfig("again", c.JSON())
		if err != nil {
			t.Fatalf("its own JSON does not parse: %v", err)
		}
		if string(again.JSON()) != string(c.JSON()) {
			t.Fatalf("JSON round trip differs:\n%s\n%s", c.JSON(), again.JSON())
		}
	})
}
