package plan

import (
	"cmp"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"gelo/device"
	"gelo/formats"
	"gelo/ir"
	"gelo/lower"
	"gelo/lower/cpu"
	"gelo/lower/gomlx"
	"gelo/lower/vulkan"
	"gelo/models"
	"gelo/passes"
	"gelo/runtime"
)

// ErrEngine marks a bad engine choice (an unknown backend or device name),
// so a CLI can print its usage.
var ErrEngine = errors.New("bad engine choice")

// EngineOptions choose what runs a compiled module. They do not change
// the compiled program, so they are not part of Options or the plan.
type EngineOptions struct {
	// Backend is cpu (TEE kernels in Go, the device per Device), gomlx
	// (an unprotected module as one gomlx graph per phase; a protected one
	// keeps its TEE side on the cpu kernels and sends the device side to
	// gomlx, per GomlxBackend) or vulkan (an unprotected module only: the
	// whole step as one recorded Vulkan command buffer; Device vulkan:N
	// picks the physical device). What each takes (weight formats, KV
	// dtypes, protected plans, its device) is its record (Backends).
	Backend string
	// GomlxBackend is gomlx's engine: go, xla:cpu or xla:cuda.
	GomlxBackend string
	// Device is the untrusted side under the cpu backend: local,
	// gomlx:go, gomlx:xla:cpu, gomlx:xla:cuda, or vulkan (vulkan:N picks
	// physical device N; GELO_VULKAN_VALIDATION=1 turns the Khronos
	// validation layer on).
	Device string
	// Workers is the kernel worker count (0: GOMAXPROCS); results do not
	// depend on it.
	Workers int
	// Spy wraps the device in a device.SpyDevice that records every
	// payload (Engine.Spy): what the device sees, for the recorder and the
	// attack harness. The cpu backend only: the whole-forward gomlx engine
	// has no boundary to watch.
	Spy bool
	// Traffic, when not nil, counts what crosses to and from the device.
	Traffic *cpu.Traffic
	// Wrap, when not nil, wraps the untrusted side (the cpu backend only):
	// the integrity tests put a lying device there.
	Wrap func(device.Device) device.Device
	// ReusePads is the attack harness's insecure control of the lwe level
	// (cpu.Options.ReusePads: every ciphertext of a crossing kind carries
	// the same pad). No flag sets it.
	ReusePads bool
	// ReleaseSource says the engine owns the weights (the cpu backend
	// only): every weight the module holds in bf16 or blocks is converted
	// at load and its f32 values are dropped from w unless a graph reads
	// them as f32, so each matrix is resident once, in the plan's format.
	// w must then serve no other engine (its released tensors refuse Get).
	ReleaseSource bool
}

// Engine runs compiled modules: the runtime backend, and the cpu backend
// behind it when there is one (it profiles; the whole-forward gomlx engine
// does not).
type Engine struct {
	Runtime runtime.Backend
	CPU     *cpu.Backend
	// Spy is the recording device when EngineOptions.Spy asked for one.
	Spy *device.SpyDevice
	// Vulkan is the device under --device vulkan (its counters and
	// validation errors), nil otherwise.
	Vulkan *vulkan.Device
	// VulkanForward is the whole-forward engine under --backend vulkan
	// (its counters), nil otherwise.
	VulkanForward *vulkan.Forward
	close         func()
}

// Close releases the backend and its device.
func (e *Engine) Close() {
	if e.close != nil {
		e.close()
	}
}

// SetProfiling switches the cpu backend's per-bucket profile on or off.
func (e *Engine) SetProfiling(on bool) {
	if e.CPU != nil {
		e.CPU.SetProfiling(on)
	}
}

// TakeProfile returns and resets the profile (empty without a cpu backend).
func (e *Engine) TakeProfile() cpu.Profile {
	if e.CPU != nil {
		return e.CPU.TakeProfile()
	}
	return cpu.Profile{}
}

// Backends are the records of every backend NewEngine runs, one per
// --backend name: what each lowers, the weight formats and KV dtypes its
// own engine takes, how it runs protected plans and the device it
// provides. NewEngine checks a plan against them.
func Backends() []lower.Capabilities {
	return []lower.Capabilities{cpu.Capabilities(), gomlx.Capabilities(), vulkan.Capabilities()}
}

// backendRecord returns the record of --backend name ("" is cpu).
func backendRecord(name string) (lower.Capabilities, error) {
	if name == "" {
		name = "cpu"
	}
	var names []string
	for _, c := range Backends() {
		if c.Backend == name {
			return c, nil
		}
		names = append(names, c.Backend)
	}
	return lower.Capabilities{}, fmt.Errorf("%w: --backend %q: want %s", ErrEngine, name, lower.Or(names))
}

// needs is what a module asks of the engine that runs it.
type needs struct {
	weights, kv string // the --weights and --kv-dtype it was compiled with
	security    string
	protected   bool // its mask is not none
	// formats are the --weights formats its linear ops multiply, each
	// once, and onDevice those of the ones placed on the device: a format
	// falls back for rows that are not whole blocks (q4_k's to q8_0), so
	// they can differ from weights.
	formats, onDevice []string
	// lattice: its crossings are lwe ciphertexts (the device must run
	// device.Lattice's product).
	lattice bool
}

func needsOf(m *ir.Module) needs {
	nd := needs{weights: m.Meta["weights"], kv: m.Meta["kv_dtype"], security: m.Meta["security"],
		protected: m.Meta["mask"] != passes.MaskNone}
	if nd.weights == "" {
		nd.weights = formats.F32
	}
	if nd.kv == "" {
		nd.kv = ir.F32.String()
	}
	for _, g := range m.Graphs {
		for _, n := range g.Nodes {
			if n.Op == ir.OpLWEEncode {
				nd.lattice = true
			}
			if !ir.IsLinear(n.Op) || len(n.Inputs) < 2 {
				continue
			}
			f := linearFormat(g, n)
			if !slices.Contains(nd.formats, f) {
				nd.formats = append(nd.formats, f)
			}
			if n.Place == ir.Device && !slices.Contains(nd.onDevice, f) {
				nd.onDevice = append(nd.onDevice, f)
			}
		}
	}
	slices.Sort(nd.formats)
	slices.Sort(nd.onDevice)
	return nd
}

// linearFormat is the --weights name of the format linear op n multiplies
// in: the record of its weight's dtype, bf16dot's for bf16 weights under
// the bf16 dot product ("" when no record has it).
func linearFormat(g *ir.Graph, n *ir.Node) string {
	if dot, _ := n.Attrs.Bool(ir.AttrBF16Dot); dot {
		return formats.BF16Dot
	}
	if w := g.Node(n.Inputs[1]); w != nil {
		if f, err := formats.ByDType(w.Type.DType); err == nil {
			return f.Name
		}
	}
	return ""
}

// missing returns the formats of fs that takes refuses.
func missing(fs []string, takes func(string) bool) []string {
	var out []string
	for _, f := range fs {
		if !takes(f) {
			out = append(out, f)
		}
	}
	return out
}

// compiled says how the plan came by the formats fs, multiplied where
// ("" or " on the device"): its --weights flag, and the formats
// themselves where they are not that flag alone.
func (nd needs) compiled(fs []string, where string) string {
	if len(fs) == 1 && fs[0] == nd.weights {
		if where != "" {
			return "this plan was compiled with --weights " + nd.weights + " and multiplies" + where
		}
		return "this plan was compiled with --weights " + nd.weights
	}
	return fmt.Sprintf("this plan (compiled with --weights %s) multiplies %s weights%s", nd.weights, lower.Or(fs), where)
}

// checkEngine refuses a module whose weights or KV cache the engine named
// by label (its record c) does not take, suggesting the backends that do.
func (nd needs) checkEngine(c lower.Capabilities, label string) error {
	if !c.TakesKV(nd.kv) {
		return fmt.Errorf("%w: %s keeps an %s KV cache; this plan was compiled with --kv-dtype %s (%s)", ErrEngine, label, lower.Or(c.KVDTypes), nd.kv,
			suggest(otherBackends(c, func(o lower.Capabilities) bool { return o.TakesKV(nd.kv) }), "--kv-dtype "+lower.Or(c.KVDTypes)))
	}
	if bad := missing(nd.formats, c.TakesWeights); len(bad) > 0 {
		takesAll := func(o lower.Capabilities) bool { return len(missing(nd.formats, o.TakesWeights)) == 0 }
		return fmt.Errorf("%w: %s takes --weights %s; %s (%s)", ErrEngine, label, lower.Or(c.Weights), nd.compiled(bad, ""),
			suggest(otherBackends(c, takesAll), "--weights "+lower.Or(c.Weights)))
	}
	return nil
}

// checkDevice refuses a module that multiplies on the device d (named by
// label) in a weight format d does not take.
func (nd needs) checkDevice(d lower.Device, label string) error {
	takes := func(d lower.Device) func(string) bool {
		return func(f string) bool { return slices.Contains(d.Weights, f) }
	}
	if nd.lattice && !d.Lattice {
		var others []string
		for _, o := range Backends() {
			if o.Device.Lattice {
				others = append(others, "--device "+o.Device.Names[0])
			}
		}
		return fmt.Errorf("%w: %s has no lwe product (u32 ciphertext rows times int8 weights); this plan is --security %s (use %s)",
			ErrEngine, label, nd.security, lower.Or(others))
	}
	bad := missing(nd.onDevice, takes(d))
	if len(bad) == 0 {
		return nil
	}
	var others []string
	for _, o := range Backends() {
		if o.Device.Family != d.Family && len(missing(nd.onDevice, takes(o.Device))) == 0 {
			others = append(others, "--backend cpu --device "+o.Device.Names[0])
		}
	}
	return fmt.Errorf("%w: %s takes --weights %s; %s (%s)",
		ErrEngine, label, lower.Or(d.Weights), nd.compiled(bad, " on the device"), suggest(others, "--weights "+lower.Or(d.Weights)))
}

// suggest is the advice of a refusal: the engines that take the plan
// (alts, none when empty), or compiling it with what the refusing one
// takes.
func suggest(alts []string, compile string) string {
	if len(alts) == 0 {
		return "compile with " + compile
	}
	return "use " + lower.Or(alts) + ", or compile with " + compile
}

// otherBackends names, for a message, the backends other than c whose
// record passes takes.
func otherBackends(c lower.Capabilities, takes func(lower.Capabilities) bool) []string {
	var names []string
	for _, o := range Backends() {
		if o.Backend != c.Backend && takes(o) {
			names = append(names, "--backend "+o.Backend)
		}
	}
	return names
}

// NewEngine builds the engine eo asks for m over w; key is the session key
// of the mask stream.
//
// m is verified first (Verify), whatever its origin: an engine never runs
// a module its compiler would refuse. Then it is checked against the
// records (Backends): the engine that keeps the KV cache must take the
// plan's KV dtype and weight format, the device that multiplies must take
// the weight format, and a backend that runs unprotected plans only
// refuses a protected one.
func NewEngine(eo EngineOptions, w *models.Weights, key []byte, m *ir.Module) (*Engine, error) {
	if err := Verify(m); err != nil {
		return nil, fmt.Errorf("refusing to run the module: %w", err)
	}
	rec, err := backendRecord(eo.Backend)
	if err != nil {
		return nil, err
	}
	nd := needsOf(m)
	label := "--backend " + rec.Backend
	switch {
	case rec.Protected == lower.Protected:
		// The backend's own engine runs every plan, the device per
		// eo.Device.
	case nd.protected && rec.Protected == lower.Unprotected:
		return nil, fmt.Errorf("%w: %s runs unprotected plans only (--security none), not --security %s; a protected plan runs its device side on it with --backend cpu --device %s",
			ErrEngine, label, nd.security, rec.Device.Names[0])
	case !nd.protected && !eo.Spy:
		if err := nd.checkEngine(rec, label); err != nil {
			return nil, err
		}
		return newForward(rec, eo, w)
	default:
		// A protected plan (or a recorded one: the recorder watches a
		// device boundary) keeps its TEE side on the cpu backend and sends
		// its matmuls to this backend's device.
		dev := rec.Device.Family
		switch {
		case rec.Backend == "gomlx":
			dev = "gomlx:" + eo.GomlxBackend
		case rec.Device.Matches(eo.Device):
			dev = eo.Device
		}
		eo.Device = dev
		return newCPUEngine(eo, w, key, m, nd, label+" (its TEE side on the cpu backend)", fmt.Sprintf("the device of --backend %s (%s)", rec.Backend, dev))
	}
	return newCPUEngine(eo, w, key, m, nd, label, "--device "+cmp.Or(eo.Device, "local"))
}

// newForward opens the whole-forward engine of a backend that has one.
func newForward(rec lower.Capabilities, eo EngineOptions, w *models.Weights) (*Engine, error) {
	switch rec.Backend {
	case "gomlx":
		fw, err := gomlx.NewForward(eo.GomlxBackend, w)
		if err != nil {
			return nil, fmt.Errorf("--backend gomlx: %w", err)
		}
		return &Engine{Runtime: runtime.Adapt(fw.Name(), fw.Compile), close: func() { fw.Close() }}, nil
	case "vulkan":
		vo, err := vulkanOptions(eo.Device)
		if err != nil {
			return nil, err
		}
		fw, err := vulkan.NewForward(vo, w)
		if err != nil {
			return nil, fmt.Errorf("--backend vulkan: %w", err)
		}
		return &Engine{Runtime: runtime.Adapt(fw.Name(), fw.Compile), VulkanForward: fw, close: fw.Close}, nil
	}
	return nil, fmt.Errorf("%w: --backend %s has no whole-forward engine", ErrEngine, rec.Backend)
}

// newCPUEngine runs m on the cpu backend with the device eo.Device names,
// after checking the records of both; label and devLabel name them in
// messages.
func newCPUEngine(eo EngineOptions, w *models.Weights, key []byte, m *ir.Module, nd needs, label, devLabel string) (*Engine, error) {
	c, err := backendRecord("cpu")
	if err != nil {
		return nil, err
	}
	if err := nd.checkEngine(c, label); err != nil {
		return nil, err
	}
	for _, o := range Backends() {
		if o.Device.Matches(cmp.Or(eo.Device, "local")) {
			if err := nd.checkDevice(o.Device, devLabel); err != nil {
				return nil, err
			}
		}
	}
	be, spy, vk, done, err := newCPU(eo, w, key)
	if err != nil {
		return nil, err
	}
	if eo.ReleaseSource {
		// Each source tensor is freed as its conversion lands: collecting
		// at 25 % growth instead of 100 % lets the next conversions reuse
		// that memory rather than grow the heap by about the model's size
		// (the heap is large pointer-free slices, cheap to collect).
		old := debug.SetGCPercent(25)
		err := be.Preload(m, true)
		debug.SetGCPercent(old)
		if err != nil {
			done()
			return nil, err
		}
		debug.FreeOSMemory() // the released f32 values leave the resident set now, not at some later GC
	}
	return &Engine{Runtime: runtime.Adapt(be.Name(), be.Compile), CPU: be, Spy: spy, Vulkan: vk, close: done}, nil
}

// newCPU builds the cpu backend with the device eo.Device names. The
// returned close releases both.
func newCPU(eo EngineOptions, w *models.Weights, key []byte) (*cpu.Backend, *device.SpyDevice, *vulkan.Device, func(), error) {
	opt := cpu.Options{Workers: eo.Workers, SessionKey: key, Traffic: eo.Traffic, ReusePads: eo.ReusePads}
	closeDev := func() {}
	var vk *vulkan.Device
	switch {
	case eo.Device == "" || eo.Device == "local":
		// The backend's own local device, on its pool (Wrap below).
	case strings.HasPrefix(eo.Device, "gomlx:"):
		d, err := gomlx.New(strings.TrimPrefix(eo.Device, "gomlx:"))
		if err != nil {
			return nil, nil, nil, nil, fmt.Errorf("--device %s: %w", eo.Device, err)
		}
		opt.Device, closeDev = d, func() { d.Close() }
	case eo.Device == "vulkan" || strings.HasPrefix(eo.Device, "vulkan:"):
		vo, err := vulkanOptions(eo.Device)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		d, err := vulkan.New(vo)
		if err != nil {
			return nil, nil, nil, nil, fmt.Errorf("--device %s: %w", eo.Device, err)
		}
		opt.Device, closeDev, vk = d, d.Close, d
	default:
		return nil, nil, nil, nil, fmt.Errorf("%w: --device %q: want local, gomlx:go, gomlx:xla:cpu, gomlx:xla:cuda or vulkan", ErrEngine, eo.Device)
	}
	var spy *device.SpyDevice
	if eo.Wrap != nil || eo.Spy {
		opt.Wrap = func(d device.Device) device.Device {
			if eo.Wrap != nil {
				d = eo.Wrap(d)
			}
			if eo.Spy {
				spy = device.NewSpy(d)
				d = spy
			}
			return d
		}
	}
	be := cpu.New(w, opt)
	return be, spy, vk, func() { be.Close(); closeDev() }, nil
}

// vulkanOptions reads the device choice of --device vulkan or vulkan:N
// (and of --backend vulkan, where --device local means the default
// device); GELO_VULKAN_VALIDATION=1 turns the validation layer on.
func vulkanOptions(dev string) (vulkan.Options, error) {
	vo := vulkan.Options{DeviceIndex: -1, Validation: os.Getenv("GELO_VULKAN_VALIDATION") == "1"}
	if idx, ok := strings.CutPrefix(dev, "vulkan:"); ok {
		n, err := strconv.Atoi(idx)
		if err != nil || n < 0 {
			return vo, fmt.Errorf("%w: --device %q: want vulkan or vulkan:N, N a device index", ErrEngine, dev)
		}
		vo.DeviceIndex = n
	}
	return vo, nil
}

// NewSession builds a session over a fresh engine; close releases both.
func NewSession(eo EngineOptions, w *models.Weights, key []byte, m *ir.Module, opt runtime.Options) (*runtime.Session, func(), error) {
	eng, err := NewEngine(eo, w, key, m)
	if err != nil {
		return nil, nil, err
	}
	s, err := runtime.NewSession(m, eng.Runtime, opt)
	if err != nil {
		eng.Close()
		return nil, nil, err
	}
	return s, eng.Close, nil
}

// RandomKey returns 32 fresh random bytes: a session key for one run.
func RandomKey() ([]byte, error) {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("session key: %w", err)
	}
	return k, nil
}
