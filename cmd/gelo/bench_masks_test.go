package main

import (
	"strings"
	"testing"

	"gelo/lower/cpu/kernels"
)

// TestBenchMasksCompilesEachEntry: every --masks entry of the masks suite
// is its own plan (a level name that level, a family the expert knobs with
// it). Before, each entry compiled the --security level, so none and exact
// were one plan measured twice. The decode split's device row tells them
// apart: none sends every matmul to the device, exact keeps them all in the
// TEE at B = 1 (the TEE matmul row), hd3 (custom knobs) masks what
// crosses.
func TestBenchMasksCompilesEachEntry(t *testing.T) {
	out, errs, code := gelo(t, "bench", "--suite", "masks", "--masks", "none,exact,hd3", "--prefill", "8", "--decode", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
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

// TestBenchMasksRefusesUnknownEntry: an entry that is neither a level nor
// a mask family is a usage error naming it (before the fix it was ignored).
func TestBenchMasksRefusesUnknownEntry(t *testing.T) {
	_, errs, code := gelo(t, "bench", "--suite", "masks", "--masks", "none,bogus", "--prefill", "4", "--decode", "1")
	if code != 2 || !strings.Contains(errs, `"bogus"`) {
		t.Fatalf("exit %d, stderr %q: want a usage error naming bogus", code, errs)
	}
}

// TestBF16DotWarnsWithoutTheInstruction: --weights bf16dot on a CPU
// without AVX512_BF16 still runs (the portable kernel, the same bits) but
// says it is slower than --weights bf16; where the instruction is, nothing
// is said.
func TestBF16DotWarnsWithoutTheInstruction(t *testing.T) {
	_, errs, code := gelo(t, "generate", "--weights", "bf16dot", "--max-tokens", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if warned := strings.Contains(errs, "no AVX512_BF16"); warned == kernels.HasBF16Dot() {
		t.Errorf("HasBF16Dot %v, warned %v; stderr:\n%s", kernels.HasBF16Dot(), warned, errs)
	}
	if _, errs, _ := gelo(t, "generate", "--weights", "bf16", "--max-tokens", "1"); strings.Contains(errs, "AVX512_BF16") {
		t.Errorf("--weights bf16 warned: %s", errs)
	}
}
