package bench

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"gelo/formats"
	"gelo/ir"
	"gelo/models"
	"gelo/passes"
	"gelo/plan"
)

// tinyEnv is an Env over qwen3-tiny's synthetic weights with fixed
// machine figures (no probe: the tests check what is printed, not how
// fast), its tables written to the returned buffer.
func tinyEnv(t *testing.T) (*Env, *bytes.Buffer) {
	t.Helper()
	m, err := models.Open("qwen3-tiny", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	key, err := plan.RandomKey()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	return &Env{Model: m, Engine: plan.EngineOptions{Backend: "cpu", Device: "local"}, Key: key, Steps: 2, MaxContext: 64,
		Machine: Machine{Workers: 1, Bandwidth: 10, Peak: 10}, Out: &out}, &out
}

// TestModuleTakesEnvWeights: the suites that compile their own plans
// (fusion, replay, batch, ...) take the weight format and KV dtype of the
// Env, as the masks suite does; before, they compiled f32 weights and an
// f32 cache whatever the flags said. A suite that names its format (the
// weights suite) keeps it.
func TestModuleTakesEnvWeights(t *testing.T) {
	cfg, err := models.Variant("qwen3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	e := &Env{Weights: formats.Q8_0, KVDType: ir.F16, Model: &models.Model{Weights: &models.Weights{Config: cfg}}}
	m, err := e.module(protectWith(passes.MaskNone), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Meta["weights"]; got != formats.Q8_0 {
		t.Errorf("weights %q, want the Env's %q", got, formats.Q8_0)
	}
	if got := m.Meta["kv_dtype"]; got != "f16" {
		t.Errorf("kv_dtype %q, want the Env's f16", got)
	}
	po := protectWith(passes.MaskNone)
	po.Weights = formats.Q4_0
	if m, err = e.module(po, nil); err != nil {
		t.Fatal(err)
	}
	if got := m.Meta["weights"]; got != formats.Q4_0 {
		t.Errorf("a suite's own format: weights %q, want %q", got, formats.Q4_0)
	}
}

// TestMasksEachEntryItsOwnPlan: every entry of the masks suite is its own
// plan (before, each compiled the --security level, so none and exact
// were one plan measured twice). The decode split's device row tells them
// apart: none sends every matmul to the device, exact keeps them all in
// the TEE at B = 1 (the TEE matmul row), hd3 (custom knobs) masks what
// crosses.
func TestMasksEachEntryItsOwnPlan(t *testing.T) {
	e, buf := tinyEnv(t)
	hd3 := plan.Knobs()
	hd3.Security, hd3.Mask = "", passes.MaskHD3
	entries := []Entry{{"none", plan.Level(passes.LevelNone)}, {"exact", plan.Level(passes.LevelExact)}, {"hd3", hd3}}
	if err := Masks(e, entries, []int{8}, 1); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	_, split, ok := strings.Cut(out, "per-bucket split, decode step")
	if !ok {
		t.Fatalf("no decode split in:\n%s", out)
	}
	var device, local, rate, mask string
	for _, line := range strings.Split(split, "\n") {
		switch {
		case device == "" && strings.HasPrefix(line, "device matmul"):
			device = line
		case rate == "" && strings.HasPrefix(line, "TEE matmul GB/s"):
			rate = line
		case local == "" && strings.HasPrefix(line, "TEE matmul"):
			local = line
		case mask == "" && strings.HasPrefix(line, "mask apply+unapply"):
			mask = line
		}
	}
	// The matmuls exact keeps in the TEE have their own row (they were
	// counted as "other"), and the decode split prints their streaming rate.
	l := strings.Fields(strings.TrimPrefix(local, "TEE matmul"))
	if len(l) != 6 || l[0] != "0s" || l[2] == "0s" {
		t.Errorf("TEE matmul row %q: want none 0 and exact > 0", local)
	}
	if r := strings.Fields(strings.TrimPrefix(rate, "TEE matmul GB/s")); len(r) < 3 || r[0] != "-" {
		t.Errorf("TEE matmul GB/s row %q: want none - and a rate for exact", rate)
	}
	f := strings.Fields(strings.TrimPrefix(device, "device matmul"))
	if len(f) != 6 {
		t.Fatalf("device row %q", device)
	}
	if f[0] == "0s" || f[2] != "0s" || f[4] == "0s" {
		t.Errorf("device matmul time none %s, exact %s, hd3 %s: want none and hd3 > 0, exact 0", f[0], f[2], f[4])
	}
	m := strings.Fields(strings.TrimPrefix(mask, "mask apply+unapply"))
	if len(m) != 6 || m[0] != "0s" || m[4] == "0s" {
		t.Errorf("mask row %q: want none 0 and hd3 > 0", mask)
	}
	// The bare read of the decode's weights beside the steps: a row for
	// exact (its matmuls are the TEE's), none for none (the device's).
	_, reads, ok := strings.Cut(out, "decode against a bare read of its weights")
	if !ok {
		t.Fatalf("no bare-read table in:\n%s", out)
	}
	reads, _, _ = strings.Cut(reads, "\n\n")
	rows := map[string][]string{}
	for _, line := range strings.Split(reads, "\n")[2:] {
		if f := strings.Fields(line); len(f) > 0 {
			rows[f[0]] = f
		}
	}
	if _, ok := rows["none"]; ok {
		t.Errorf("a bare-read row for none, whose matmuls are the device's:\n%s", reads)
	}
	// exact  512.00 KiB  37µs  14.2  52 %  87 %
	if r := rows["exact"]; len(r) != 9 || r[2] != "KiB" && r[2] != "MiB" || r[5] == "0.0" {
		t.Errorf("exact's bare-read row %q: want bytes, a time, GB/s and two shares", r)
	}
}

// TestSecurityFrontierListsEveryLevel: the cost-only frontier prints
// three scenarios for each level of passes.Levels(), in its order (the
// suite kept a list of its own, which a new level would have missed),
// builds no engine and ends with the whitened floor.
func TestSecurityFrontierListsEveryLevel(t *testing.T) {
	cfg, err := models.Variant("qwen3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	e := &Env{Model: &models.Model{Weights: &models.Weights{Config: cfg}}, Out: &buf}
	if err := Security(e, 16, 4, false); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(buf.String(), "\n") {
		if f := strings.Fields(line); len(f) > 2 && (f[1] == "prefill" || f[1] == "decode") {
			got = append(got, f[0]+" "+f[1]+" "+f[2])
		}
	}
	var want []string
	for _, l := range passes.Levels() {
		want = append(want, l.Name+" prefill n=16", l.Name+" decode B=4", l.Name+" decode B=1")
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("frontier rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(buf.String(), "floor of any whitened level") {
		t.Errorf("no whitened floor in:\n%s", buf.String())
	}
}

// TestWhitenFloor: on the Qwen3-0.6B shapes at prefill n = 2040, the o
// and down projections' Gram alone (n^2 d / 2 with n < d) costs as much as
// their matmul (n d d_out, d_out = 1024 = n / 2), so they stay in the TEE
// under any whitened level and the floor is at least their share of the
// linear work, a third; the other ops add their Grams. At B = 1 the Gram
// of one row is nothing next to a matmul.
func TestWhitenFloor(t *testing.T) {
	cfg, err := models.Variant("qwen3-0.6b")
	if err != nil {
		t.Fatal(err)
	}
	var od, all float64
	for _, sh := range linearShapes(cfg) {
		rows := 2040.0
		if sh.lmHead {
			rows = 1
		}
		w := rows * float64(sh.d*sh.dOut*sh.perPass)
		all += w
		if sh.op == "o" || sh.op == "down" {
			od += w
		}
	}
	f := whitenFloor(cfg, 2040, true)
	if f < od/all || f > 0.5 {
		t.Errorf("floor at n = 2040: %.3f, want at least o+down's share %.3f (and below one half)", f, od/all)
	}
	if f := whitenFloor(cfg, 1, false); f > 0.01 {
		t.Errorf("floor at B = 1: %.4f, want about d / (2 d_out) of each op (< 1 %%)", f)
	}
}

// TestServeRunsEachClientCount: the serve suite's loopback load run on
// qwen3-tiny prints one row per level and client count, every request
// answered with its tokens.
func TestServeRunsEachClientCount(t *testing.T) {
	e, buf := tinyEnv(t)
	if err := Serve(e, []int{1, 2}, 4, 2); err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, line := range strings.Split(buf.String(), "\n") {
		f := strings.Fields(line)
		if len(f) < 7 || (f[0] != passes.LevelNone && f[0] != passes.DefaultLevel) {
			continue
		}
		rows++
		if f[1] != "1" && f[1] != "2" || f[2] != "8" || f[6] == "0.0" {
			t.Errorf("row %q: want clients 1 or 2, 8 requests, tokens generated", line)
		}
	}
	if rows != 4 {
		t.Errorf("%d rows, want 2 levels x 2 client counts:\n%s", rows, buf.String())
	}
}

// TestBatchTopologies: the batch suite runs each entry under the
// topologies its plan takes: none per-sequence, a mask family both, a
// full-span level (exact) the shared one alone; before, it compiled exact
// per-sequence too, and the plan's refusal ended the suite.
func TestBatchTopologies(t *testing.T) {
	e, buf := tinyEnv(t)
	if err := Batch(e, []string{passes.MaskNone, passes.MaskHD3, passes.LevelExact}, 2); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(buf.String(), "\n")[3:] {
		if f := strings.Fields(line); len(f) > 0 {
			got = append(got, strings.Join(f[:len(f)-5], " "))
		}
	}
	want := "none|hd3 per-sequence|hd3 shared|exact shared"
	if strings.Join(got, "|") != want {
		t.Errorf("rows %q, want %s:\n%s", got, want, buf.String())
	}
}

// TestDeviceNeedsADevice: the device suite compares two devices; an Env
// on the local one alone is refused before anything is compiled.
func TestDeviceNeedsADevice(t *testing.T) {
	for _, dev := range []string{"", "local"} {
		e := &Env{Engine: plan.EngineOptions{Backend: "cpu", Device: dev}}
		if err := Device(e, plan.Level(passes.LevelNone), 4); !errors.Is(err, ErrNoDevice) {
			t.Errorf("device %q: err %v, want ErrNoDevice", dev, err)
		}
	}
}

func TestShort(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{1234567 * time.Nanosecond, "1.23ms"},
		{12345678 * time.Nanosecond, "12.3ms"},
		{123456789 * time.Nanosecond, "123ms"},
		{1234567890 * time.Nanosecond, "1.23s"},
		{4567 * time.Nanosecond, "4.57µs"},
		{999 * time.Nanosecond, "999ns"},
		{2 * time.Hour, "2h0m0s"},
	} {
		if got := Short(tc.d); got != tc.want {
			t.Errorf("Short(%v) = %s, want %s", tc.d, got, tc.want)
		}
	}
}

func TestStatusKB(t *testing.T) {
	status := []byte("Name:\tgelo\nVmHWM:\t  2048 kB\nVmRSS:\t    1024 kB\nThreads:\t3\n")
	if got := statusKB(status, "VmRSS:"); got != 1024<<10 {
		t.Errorf("VmRSS = %d", got)
	}
	if got := statusKB(status, "VmHWM:"); got != 2048<<10 {
		t.Errorf("VmHWM = %d", got)
	}
	for _, bad := range []string{"VmRSS:\t12 MB\n", "VmRSS:\t-3 kB\n", "VmRSS:\tx kB\n", "VmRSS:\n", ""} {
		if got := statusKB([]byte(bad), "VmRSS:"); got != 0 {
			t.Errorf("%q: %d, want 0", bad, got)
		}
	}
	if ResidentBytes() < 0 || PeakResidentBytes() < 0 {
		t.Error("negative resident size")
	}
	if HumanRSS(0) != "n/a" {
		t.Error("unknown RSS not n/a")
	}
}
