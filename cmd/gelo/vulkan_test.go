package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gelo/lower/vulkan/vulkantest"
)

// TestVulkanDeviceVerbs: generate, replay, record and bench --suite device
// take --device vulkan; generate's tokens are the local device's.
func TestVulkanDeviceVerbs(t *testing.T) {
	vulkantest.Open(t) // skips without a driver
	key := []string{"--session-key", "000102030405060708090a0b0c0d0e0f", "--security", "none"}
	local, _, _ := gelo(t, append([]string{"generate", "--max-tokens", "6"}, key...)...)
	got, errs, code := gelo(t, append([]string{"generate", "--max-tokens", "6", "--device", "vulkan"}, key...)...)
	if code != 0 || got != local {
		t.Errorf("generate --device vulkan: %q (%s), local %q", got, errs, local)
	}
	out, errs, code := gelo(t, "replay", "--device", "vulkan", "--steps", "8")
	if code != 0 || !strings.Contains(out, "bit-identical") {
		t.Errorf("replay --device vulkan: exit %d, %q %q", code, out, errs)
	}
	rec := filepath.Join(t.TempDir(), "r.safetensors")
	if _, errs, code = gelo(t, append([]string{"record", "--device", "vulkan", "--out", rec, "--max-tokens", "2"}, key...)...); code != 0 {
		t.Errorf("record --device vulkan: exit %d, %s", code, errs)
	}
	out, errs, code = gelo(t, append([]string{"bench", "--device", "vulkan", "--suite", "device", "--prefill", "8", "--decode", "4"}, key...)...)
	if code != 0 || !strings.Contains(out, "one replayed 1-row 32x32 crossing") {
		t.Errorf("bench --suite device: exit %d, %q %q", code, out, errs)
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 11 || f[0] != "vulkan" {
			continue
		}
		if _, err := strconv.ParseFloat(f[4], 64); err == nil && f[6] != "0.0" { // a table row
			t.Errorf("bench: replayed decode steps recorded command buffers: %q", line)
		}
	}
	if _, errs, code = gelo(t, "generate", "--device", "vulkan:x"); code != 2 || !strings.Contains(errs, `"vulkan:x"`) {
		t.Errorf("--device vulkan:x: exit %d, %q", code, errs)
	}
	if _, errs, code = gelo(t, "bench", "--suite", "device"); code != 2 || !strings.Contains(errs, "--suite device") {
		t.Errorf("bench --suite device without --device: exit %d, %q", code, errs)
	}
}

// TestVulkanBackendVerbs: --backend vulkan --security none runs the whole
// forward on Vulkan: generate's tokens are the cpu backend's, replay is
// bit-identical, record works (through the cpu backend with the device on
// Vulkan), bench prints both engines with one submit a token and no
// recording on a replayed step; a protected level is a usage error naming
// --security.
func TestVulkanBackendVerbs(t *testing.T) {
	vulkantest.Open(t) // skips without a driver
	key := []string{"--session-key", "000102030405060708090a0b0c0d0e0f", "--security", "none"}
	cpuOut, _, _ := gelo(t, append([]string{"generate", "--max-tokens", "8"}, key...)...)
	got, errs, code := gelo(t, append([]string{"generate", "--max-tokens", "8", "--backend", "vulkan"}, key...)...)
	if code != 0 || got != cpuOut {
		t.Errorf("generate --backend vulkan: %q (%s), cpu %q", got, errs, cpuOut)
	}
	out, errs, code := gelo(t, append([]string{"replay", "--backend", "vulkan", "--steps", "8"}, key...)...)
	if code != 0 || !strings.Contains(out, "bit-identical") {
		t.Errorf("replay --backend vulkan: exit %d, %q %q", code, out, errs)
	}
	rec := filepath.Join(t.TempDir(), "r.safetensors")
	if _, errs, code = gelo(t, append([]string{"record", "--backend", "vulkan", "--out", rec, "--max-tokens", "2"}, key...)...); code != 0 {
		t.Errorf("record --backend vulkan: exit %d, %s", code, errs)
	}
	out, errs, code = gelo(t, append([]string{"bench", "--backend", "vulkan", "--prefill", "8", "--decode", "4"}, key...)...)
	if code != 0 || !strings.Contains(out, "whole forward on") {
		t.Fatalf("bench --backend vulkan: exit %d, %q %q", code, out, errs)
	}
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 11 || (f[0] != "cpu" && f[0] != "vulkan") {
			continue
		}
		rows++
		if f[0] == "vulkan" && (f[4] != "1.0" || f[6] != "0.0") {
			t.Errorf("bench: the whole-forward step is not one submit without recordings: %q", line)
		}
	}
	if rows != 2 {
		t.Errorf("bench --backend vulkan printed %d engine rows, want cpu and vulkan:\n%s", rows, out)
	}
	_, errs, code = gelo(t, "generate", "--backend", "vulkan", "--max-tokens", "2")
	if code != 2 || !strings.Contains(errs, "--security") {
		t.Errorf("--backend vulkan at the default level: exit %d, %q", code, errs)
	}
}
