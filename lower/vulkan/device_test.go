//go:build cgo

package vulkan

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"gelo/device/wire"
)

// open returns a device for the test, with the validation layer on where
// it is installed, and fails the test on any validation error at cleanup.
// Without a driver it skips, unless GELO_REQUIRE_VULKAN=1 (CI) makes that
// a failure.
func open(t testing.TB, opt Options) *Device {
	t.Helper()
	opt.Validation = !opt.noValidation
	if opt.DeviceIndex == 0 {
		opt.DeviceIndex = -1
	}
	d, err := New(opt)
	if errors.Is(err, ErrUnavailable) {
		if os.Getenv("GELO_REQUIRE_VULKAN") == "1" {
			t.Fatalf("GELO_REQUIRE_VULKAN=1 and no Vulkan driver: %v", err)
		}
		t.Skipf("no Vulkan driver (install mesa-vulkan-drivers for lavapipe): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n, msg := d.ValidationErrors()
		d.Close()
		if n > 0 {
			t.Errorf("%d Vulkan validation errors, latest:\n%s", n, msg)
		}
	})
	return d
}

func randF32(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

func toBF16(v []float32) []uint16 {
	out := make([]uint16, len(v))
	for i, x := range v {
		out[i] = uint16(math.Float32bits(x) >> 16)
	}
	return out
}

func fromBF16(v []uint16) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = math.Float32frombits(uint32(x) << 16)
	}
	return out
}

// refMatMul is y = x W^T summed in float64.
func refMatMul(x, w []float32, m, rows, cols int) []float32 {
	y := make([]float32, m*rows)
	for i := range m {
		for r := range rows {
			var s float64
			for k := range cols {
				s += float64(x[i*cols+k]) * float64(w[r*cols+k])
			}
			y[i*rows+r] = float32(s)
		}
	}
	return y
}

// refQ is the canonical quantized product of gelo's Go kernels: exact
// int32 block sums, then acc += isum * (dw * dx) block by block in float32.
func refQ(a *wire.Activations, w *wire.Matrix) []float32 {
	m, nb := a.Rows(), w.BlocksPerRow()
	y := make([]float32, m*w.Rows)
	for r := range w.Rows {
		for i := range m {
			var acc float32
			for b := range nb {
				q, dx := a.Block(i, b)
				blk, dw := w.Block(r, b), w.Scale(r, b)
				var isum int32
				for j, v := range q {
					var code int32
					switch {
					case w.Format == wire.Q8_0:
						code = int32(int8(blk[2+j]))
					case j < wire.QK/2:
						code = int32(blk[2+j]&15) - 8
					default:
						code = int32(blk[2+j-wire.QK/2]>>4) - 8
					}
					isum += code * int32(v)
				}
				s := dw * dx
				acc = acc + float32(isum)*s
			}
			y[i*w.Rows+r] = acc
		}
	}
	return y
}

func maxRelErr(got, want []float32) float64 {
	var scale, worst float64
	for _, v := range want {
		scale = max(scale, math.Abs(float64(v)))
	}
	for i := range got {
		worst = max(worst, math.Abs(float64(got[i])-float64(want[i])))
	}
	return worst / max(scale, 1e-30)
}

var shapes = []struct{ rows, cols int }{{37, 64}, {130, 96}, {5, 32}}

var rowCounts = []int{1, 3, 8, 9, 17, 40}

func TestMatMulF32AndBF16(t *testing.T) {
	for _, opt := range []Options{{}, {Kernels: "gpu"}, {Kernels: "gpu", Staging: true, PartBytes: 4096, IOBytes: 8192}} {
		d := open(t, opt)
		r := rand.New(rand.NewPCG(1, 2))
		for _, sh := range append(shapes, struct{ rows, cols int }{19, 33}) {
			w := randF32(r, sh.rows*sh.cols)
			wb := toBF16(w)
			if err := d.Upload("w", w, sh.rows, sh.cols); err != nil {
				t.Fatal(err)
			}
			if err := d.UploadBF16("wb", wb, sh.rows, sh.cols); err != nil {
				t.Fatal(err)
			}
			for _, m := range rowCounts {
				x := randF32(r, m*sh.cols)
				for _, c := range []struct {
					name string
					w    []float32
				}{{"w", w}, {"wb", fromBF16(wb)}} {
					y := make([]float32, m*sh.rows)
					if err := d.MatMul("test", c.name, x, m, y); err != nil {
						t.Fatal(err)
					}
					if e := maxRelErr(y, refMatMul(x, c.w, m, sh.rows, sh.cols)); e > 1e-5 {
						t.Errorf("%+v %s [%d, %d] m=%d: max error %.3g of the largest product", opt, c.name, sh.rows, sh.cols, m, e)
					}
				}
			}
		}
	}
}

func TestMatMulQIsTheCanonicalProduct(t *testing.T) {
	for _, opt := range []Options{{}, {Kernels: "gpu"}, {Kernels: "cpu", Staging: true, PartBytes: 2048, IOBytes: 8192}} {
		d := open(t, opt)
		r := rand.New(rand.NewPCG(3, 4))
		for _, f := range []wire.Format{wire.Q8_0, wire.Q4_0} {
			for _, sh := range shapes {
				wm, err := wire.Quantize(f, randF32(r, sh.rows*sh.cols), sh.rows, sh.cols)
				if err != nil {
					t.Fatal(err)
				}
				if err := d.UploadQ("q", wm); err != nil {
					t.Fatal(err)
				}
				for _, m := range rowCounts {
					a := &wire.Activations{}
					if err := a.Quantize(randF32(r, m*sh.cols), m, sh.cols); err != nil {
						t.Fatal(err)
					}
					y := make([]float32, m*sh.rows)
					if err := d.MatMulQ("test", "q", a, y); err != nil {
						t.Fatal(err)
					}
					want := refQ(a, wm)
					for i := range y {
						if math.Float32bits(y[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%+v %v [%d, %d] m=%d: y[%d] = %v, want %v bit for bit", opt, f, sh.rows, sh.cols, m, i, y[i], want[i])
						}
					}
				}
			}
		}
	}
}

// TestReplayRecordsNothing: after each bucket's first call, more calls
// (any row count in a seen bucket) record no command buffer and give the
// same bits as the first.
func TestReplayRecordsNothing(t *testing.T) {
	d := open(t, Options{})
	r := rand.New(rand.NewPCG(5, 6))
	const rows, cols = 70, 64
	if err := d.Upload("w", randF32(r, rows*cols), rows, cols); err != nil {
		t.Fatal(err)
	}
	xs := map[int][]float32{}
	first := map[int][]float32{}
	for _, m := range []int{1, 2, 3, 5, 8, 12, 16, 33} {
		xs[m] = randF32(r, m*cols)
		first[m] = make([]float32, m*rows)
		if err := d.MatMul("t", "w", xs[m], m, first[m]); err != nil {
			t.Fatal(err)
		}
	}
	rec := d.Stats().Recordings
	for step := range 128 {
		m := []int{1, 2, 3, 5, 8, 12, 16, 33}[step%8]
		y := make([]float32, m*rows)
		if err := d.MatMul("t", "w", xs[m], m, y); err != nil {
			t.Fatal(err)
		}
		for i := range y {
			if math.Float32bits(y[i]) != math.Float32bits(first[m][i]) {
				t.Fatalf("step %d m=%d: replay differs from the first call at %d", step, m, i)
			}
		}
	}
	if got := d.Stats().Recordings; got != rec {
		t.Errorf("128 replays recorded %d command buffers, want 0", got-rec)
	}
}

func TestErrors(t *testing.T) {
	d := open(t, Options{})
	if err := d.MatMul("op", "nope", make([]float32, 4), 1, make([]float32, 4)); err == nil {
		t.Error("MatMul on a missing weight succeeded")
	}
	if err := d.Upload("w", make([]float32, 3), 2, 2); err == nil {
		t.Error("Upload with a wrong length succeeded")
	}
	if err := d.Upload("w", make([]float32, 64), 2, 32); err != nil {
		t.Fatal(err)
	}
	if err := d.MatMulQ("op", "w", &wire.Activations{}, make([]float32, 2)); err == nil {
		t.Error("MatMulQ on an f32 weight succeeded")
	}
	if err := d.MatMul("op", "w", make([]float32, 31), 1, make([]float32, 2)); err == nil {
		t.Error("MatMul with a short x succeeded")
	}
	if err := d.UploadQ("q", &wire.Matrix{Format: wire.Q8_0, Rows: 1, Cols: 32, Data: make([]byte, 3)}); err == nil {
		t.Error("UploadQ of a short matrix succeeded")
	}
	// After Close every call is an error, not a crash.
	e := open(t, Options{})
	e.Close()
	if err := e.Upload("w", make([]float32, 32), 1, 32); err == nil {
		t.Error("Upload after Close succeeded")
	}
	if err := e.MatMul("op", "w", make([]float32, 32), 1, make([]float32, 1)); err == nil {
		t.Error("MatMul after Close succeeded")
	}
	if n, _ := e.ValidationErrors(); n != 0 {
		t.Errorf("ValidationErrors after Close: %d", n)
	}
	e.Close()
}

// TestSPIRVIsGenerated regenerates the SPIR-V where the same glslang is
// installed and compares it with the committed modules.
func TestSPIRVIsGenerated(t *testing.T) {
	if _, err := exec.LookPath("glslangValidator"); err != nil {
		t.Skip("glslangValidator not installed (apt-get install glslang-tools)")
	}
	dir := t.TempDir()
	out, err := exec.Command("sh", "shaders/gen.sh", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("shaders/gen.sh: %v\n%s", err, out)
	}
	want, _ := os.ReadFile("shaders/GLSLANG_VERSION")
	got, _ := os.ReadFile(filepath.Join(dir, "GLSLANG_VERSION"))
	if !bytes.Equal(want, got) {
		t.Skipf("installed glslang is %q, the committed SPIR-V is from %q", bytes.TrimSpace(got), bytes.TrimSpace(want))
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.spv"))
	modules := numFwd
	for k := range numKinds {
		for f := range numFormats {
			if hasShader(k, f) {
				modules++
			}
		}
	}
	if len(files) != modules {
		t.Fatalf("gen.sh wrote %d modules, want %d (the matmul and the whole-forward shaders)", len(files), modules)
	}
	for _, f := range files {
		g, _ := os.ReadFile(f)
		c, err := os.ReadFile(filepath.Join("shaders", filepath.Base(f)))
		if err != nil || !bytes.Equal(g, c) {
			t.Errorf("shaders/%s is stale: run go generate ./lower/vulkan", filepath.Base(f))
		}
	}
}

// TestInfo logs the device and checks that the validation layer is on
// where it is installed (or the other tests would pass unwatched).
func TestInfo(t *testing.T) {
	d := open(t, Options{Staging: true})
	i := d.Info()
	t.Logf("%s (%s), Vulkan %s, subgroup %d, binding cap %d MiB, compute-only queue %v, validation %v",
		i.Name, i.Type, i.API(), i.SubgroupSize, i.MaxStorageRange>>20, i.ComputeOnly, i.Validation)
	if _, err := os.Stat("/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json"); err == nil && !i.Validation {
		t.Error("the Khronos validation layer is installed but was not enabled")
	}
	if d.xs == nil || d.x.mapped() != nil {
		t.Error("Staging: the crossing buffers are mapped, want device-only memory with staging twins")
	}
}
