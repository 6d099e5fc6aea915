package main

import (
	"flag"
	"strings"
	"testing"

	"gelo/passes"
)

// TestBenchEntries: each --masks entry compiles as its own plan: a level
// name at that level, a mask family under the expert knobs with that
// mask (before the masks suite took this list, every entry compiled the
// --security level, so none and exact were one plan measured twice). The
// flags are left as they were.
func TestBenchEntries(t *testing.T) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var mf modelFlags
	mf.register(fs)
	mf.registerProtect(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	before := mf
	entries, err := benchEntries(mf, []string{passes.LevelNone, passes.LevelExact, passes.MaskHD3, passes.MaskHaar})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct{ name, security, mask string }{
		{passes.LevelNone, passes.LevelNone, passes.MaskNone},
		{passes.LevelExact, passes.LevelExact, passes.MaskHaar},
		{passes.MaskHD3, "", passes.MaskHD3},
		{passes.MaskHaar, "", passes.MaskHaar},
	} {
		e := entries[i]
		if e.Name != want.name || e.Options.Security != want.security || e.Options.Mask != want.mask {
			t.Errorf("entry %d: %s security %q mask %q, want %s security %q mask %q", i, e.Name, e.Options.Security, e.Options.Mask,
				want.name, want.security, want.mask)
		}
	}
	if mf != before {
		t.Errorf("benchEntries changed the flags: %+v, was %+v", mf, before)
	}
}

// TestBenchUsageErrors: what bench's flags get wrong is a usage error
// naming the flag, given before the model loads and the machine is
// probed (nothing on stdout): a --kv-dtype the cache does not take, a
// device suite with no device to compare, an unknown suite.
func TestBenchUsageErrors(t *testing.T) {
	for _, c := range []struct {
		want string
		args []string
	}{
		{`--kv-dtype "f8"`, []string{"--kv-dtype", "f8"}},
		{`--kv-dtype "f8"`, []string{"--kv-dtype", "f8", "--suite", "serve"}},
		{"--suite device compares the local device with --device", []string{"--suite", "device"}},
		// The default --masks entry (--mask's family) is the masks suite's
		// alone: it made every other suite under a named level a usage
		// error ("--masks hd3 set protection knobs that --security none
		// fixes"), bench --suite device --security none included.
		{"--suite device compares the local device with --device", []string{"--suite", "device", "--security", "none"}},
		{`--suite "speed"`, []string{"--suite", "speed"}},
		{`"bogus"`, []string{"--masks", "none,bogus"}},
		{"--lwe-layers 0: want 1 to 1024", []string{"--suite", "lwe", "--lwe-layers", "0"}},
	} {
		out, errs, code := gelo(t, append([]string{"bench", "--prefill", "4", "--decode", "1"}, c.args...)...)
		if code != 2 || !strings.Contains(errs, c.want) || out != "" {
			t.Errorf("bench %v: exit %d, stdout %q, stderr %q: want a usage error saying %s and nothing measured", c.args, code, out, errs, c.want)
		}
	}
}

// TestBenchDefaultEntry: without --masks the masks suite measures the
// plan the other flags name: the default level with no flags (it measured
// a custom hd3 plan labelled hd3), a named level (a usage error before),
// and --mask's family under the expert knobs.
func TestBenchDefaultEntry(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, passes.DefaultLevel},
		{[]string{"--security", "none"}, "none"},
		{[]string{"--security", "exact"}, "exact"},
		{[]string{"--mask", "haar"}, "haar"},
		{[]string{"--security", "custom", "--mask", "hd3"}, "hd3"},
	} {
		out, errs, code := gelo(t, append([]string{"bench", "--prefill", "4", "--decode", "1"}, tc.args...)...)
		if code != 0 {
			t.Errorf("bench %v: exit %d: %s", tc.args, code, errs)
			continue
		}
		_, rows, _ := strings.Cut(out, "TPOT (B=1)")
		if f := strings.Fields(rows); len(f) < 5 || f[3] != tc.want {
			t.Errorf("bench %v: measured %q, want %s", tc.args, f[:min(len(f), 4)], tc.want)
		}
	}
}
