package plan_test

import (
	"reflect"
	"strings"
	"testing"

	"gelo/models"
	"gelo/plan"
	"gelo/plan/planfile"
)

// TestSealBuiltin: a plan compiled from the built-in model records it as
// a built-in source with its embedded tokenizer, has the model identity of
// the directory it was embedded from (config, weights and tokenizer bytes
// are the same, so the identity is: a verifier can recompute it from
// models/trained), reopens from the binary with that identity, and is
// refused when a directory with other weights is put in its place.
func TestSealBuiltin(t *testing.T) {
	open := func(spec string) *models.Model {
		t.Helper()
		m, err := models.OpenPrivate(spec, 1, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	builtin, dir := open(models.BuiltinModel), open("../models/trained")
	p, id, data := seal(t, builtin, plan.Defaults(), "")
	want := planfile.Source{Kind: planfile.SourceBuiltin, Name: models.BuiltinModel, Tokenizer: models.BuiltinModel + "#tokenizer"}
	if p.Source != want {
		t.Fatalf("source %+v, want %+v", p.Source, want)
	}
	if !id.HasTokenizer {
		t.Fatal("the identity binds no tokenizer: the built-in model's was not found")
	}
	_, dirID, _ := seal(t, dir, plan.Defaults(), "")
	if !reflect.DeepEqual(dirID, id) {
		t.Errorf("identity of the built-in model\n%+v\ndiffers from the directory's\n%+v", id, dirID)
	}
	dec, err := planfile.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	o, err := plan.OpenSealedTokenizer("kjv.gelo", dec, plan.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	o.Model.Close()
	if o.Identity.Digest != id.Digest || o.Tokenizer.Tok == nil || o.Tokenizer.Path != want.Tokenizer {
		t.Fatalf("reopened identity %s (sealed %s), tokenizer %q", o.Identity.Digest, id.Digest, o.Tokenizer.Path)
	}
	if n := len(o.Tokenizer.Tok.Encode("In the beginning")); n == 0 {
		t.Fatal("the reopened tokenizer encodes nothing")
	}

	// Another model in its place is refused, naming the built-in one.
	other := t.TempDir()
	if err := models.WriteSynthetic(other, builtin.Config, 3, "bf16", nil); err != nil {
		t.Fatal(err)
	}
	_, _, err = plan.OpenSealed("kjv.gelo", dec, plan.Overrides{Model: other, Tokenizer: want.Tokenizer})
	if err == nil || !strings.Contains(err.Error(), "weights differ") {
		t.Fatalf("synthetic weights against the built-in model's plan: %v", err)
	}
}

// TestBuiltinSourceMeta: the plan file's meta check takes a built-in
// source by name only.
func TestBuiltinSourceMeta(t *testing.T) {
	builtin, err := models.OpenPrivate(models.BuiltinModel, 1, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer builtin.Close()
	p, _, _ := seal(t, builtin, plan.Defaults(), "")
	for _, tc := range []struct {
		name string
		edit func(*planfile.Source)
		want string
	}{
		{"seed", func(s *planfile.Source) { s.Seed = 1 }, "a built-in model has no seed"},
		{"name", func(s *planfile.Source) { s.Name = "../x" }, "not a built-in model name"},
	} {
		forged := *p
		tc.edit(&forged.Source)
		if _, err := planfile.Decode(planfile.Encode(&forged)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
