// Package gpu holds the prepared script that runs gelo's device paths on a
// lent GPU (run.sh, prepare.sh; see README.md) and the test that keeps it
// working between the rare lent runs.
package gpu

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDryRun runs run.sh on the CPU (gomlx's go engine in place of XLA's
// CUDA plugin, Vulkan on lavapipe, qwen3-tiny, short runs) against a gelo
// and a lower/gomlx test binary built from this tree, and checks that every parity line says identical,
// every section printed its figures and nothing failed: what a lent run
// would do, without the GPU.
func TestDryRun(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds gelo and runs the GPU script's dry run (about a minute)")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	if os.Getenv("GELO_REQUIRE_VULKAN") != "1" {
		if out, _ := exec.Command("ldconfig", "-p").Output(); !strings.Contains(string(out), "libvulkan.so.1") {
			t.Skip("no Vulkan loader (GELO_REQUIRE_VULKAN=1 makes this a failure)")
		}
	}
	dir := t.TempDir()
	gelo := filepath.Join(dir, "gelo")
	build := exec.Command("go", "build", "-o", gelo, "../../cmd/gelo")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// The lwe product's check runs lower/gomlx's test binary, which
	// prepare.sh builds beside gelo for a lent run.
	build = exec.Command("go", "test", "-c", "-o", filepath.Join(dir, "lower_gomlx.test"), "../../lower/gomlx")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go test -c ./lower/gomlx: %v\n%s", err, out)
	}
	run := exec.Command("bash", "run.sh")
	run.Env = append(os.Environ(), "GELO_GPU_MODE=dry", "GELO_BIN="+gelo, "OUT="+filepath.Join(dir, "out"), "WORK="+filepath.Join(dir, "work"))
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("run.sh: %v\n%s", err, out)
	}
	summary, err := os.ReadFile(filepath.Join(dir, "out", "summary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(summary)
	t.Logf("summary:\n%s", s)
	for _, bad := range []string{"DIFFERS", "FAILED", "exit ", "skipped"} {
		if strings.Contains(s, bad) {
			t.Errorf("summary says %q", bad)
		}
	}
	// Eight parity checks: none, gelo-8x4 and lwe (every op offloaded:
	// the ciphertext product) on two devices, and the two whole-forward
	// engines.
	if n := strings.Count(s, "identical to cpu (64 tokens)"); n != 8 {
		t.Errorf("%d parity lines identical, want 8", n)
	}
	for _, want := range []string{"speed tiny bf16 cpu", "speed tiny bf16 gomlx", "speed tiny bf16 n=32: cpu", "batch tiny bf16 vulkan B=8: none",
		"device suite: security gelo-8x4", "vulkan     TPOT over local", "whole forward on", "done in",
		"lattice u32 go: bit-exact against lwe.MulRef (26 cases, int32 and f32 forms)", "lattice bench 256x256 m=64: u32 int32 form "} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	for _, f := range []string{"env.txt", "logs.tgz"} {
		if _, err := os.Stat(filepath.Join(dir, "out", f)); err != nil {
			t.Error(err)
		}
	}
}
