package vulkan

import (
	"embed"
	"errors"
	"fmt"
)

// ErrUnavailable is wrapped by New when this machine or build has no
// usable Vulkan driver (no libvulkan, no device, no cgo): tests skip on
// it, where a failure of a present driver is an error.
var ErrUnavailable = errors.New("vulkan: no usable Vulkan driver")

// Options choose the Vulkan device and how it is used.
type Options struct {
	// DeviceIndex picks a physical device by its index; -1 (or any
	// negative value) takes the first discrete, integrated, virtual, then
	// CPU device.
	DeviceIndex int
	// Validation enables the Khronos validation layer when it is
	// installed; its errors are counted (ValidationErrors).
	Validation bool
	// Staging keeps weights and the crossing buffers in device-local
	// memory that the host never maps, with staging copies recorded in
	// each crossing: what a discrete GPU without host-visible VRAM needs,
	// forced here so the path is tested on any device.
	Staging bool
	// IOBytes is the capacity of each crossing buffer (operand rows in,
	// products out); 0 means 64 MiB, capped at the device's binding range.
	// Larger calls are cut into chunks of rows.
	IOBytes int64
	// Kernels chooses the shaders: "" picks by device type (a CPU device
	// such as lavapipe takes the lane-per-row shader for every row count,
	// a GPU the subgroup mat-vec or lane-per-row shader for few rows and
	// the tiled one above), "gpu" and "cpu" force either choice.
	Kernels string
	// noValidation keeps the layer off in benchmarks (tests turn it on).
	noValidation bool
	// PartBytes caps each weight buffer (0: the device's storage binding
	// range); weights above it are split by rows into parts.
	PartBytes int64
}

// Info describes the opened device.
type Info struct {
	Name                      string
	APIVersion, DriverVersion uint32
	VendorID                  uint32
	Type                      string
	SubgroupSize              int
	MaxStorageRange           int64
	MaxGroupCount             [3]int
	MaxPushBytes              int
	QueueFamily               int
	ComputeOnly, Validation   bool
	Devices                   int
}

// API returns the device's Vulkan version as major.minor.patch.
func (i Info) API() string {
	v := i.APIVersion
	return fmt.Sprintf("%d.%d.%d", v>>22&0x7f, v>>12&0x3ff, v&0xfff)
}

// Stats count what the device did since it was opened.
type Stats struct {
	// Recordings counts command buffers recorded: one per weight and row
	// bucket, so a replayed step adds none.
	Recordings int64
	// Submits counts queue submissions (one per crossing chunk) and
	// Dispatches the dispatches they replayed.
	Submits, Dispatches int64
	// Calls counts MatMul, MatMulQ and MatMulU32 calls.
	Calls int64
	// BytesIn and BytesOut count the operand and product bytes copied
	// into and out of the device's crossing buffers.
	BytesIn, BytesOut int64
	// WeightBytes is the resident weight memory.
	WeightBytes int64
}

// shaders holds the committed SPIR-V, one module per (kind, format).
//
//go:embed shaders/*.spv
var shaders embed.FS

// formats index the shader variants, as FMT in shaders/common.glsl. Each
// is a resident weight's format but fmtU32, which names the product of an
// int8 weight (fmtI8) by uint32 ciphertext words mod 2^32 (MatMulU32):
// the shader a call picks, not a format a weight is stored in.
const (
	fmtF32 = iota
	fmtBF16
	fmtQ8
	fmtQ4
	fmtI8
	fmtU32
	numFormats
)

var formatNames = [numFormats]string{"f32", "bf16", "q8_0", "q4_0", "int8", "u32"}

// kinds of shader: mat-vec for few rows (f32 and bf16, the GPU layout), a
// lane per weight row (any format and row count; the layout for CPU
// devices, and for quantized mat-vec everywhere), tiled for many rows.
const (
	kindMatVec = iota
	kindRows
	kindTiled
	numKinds
)

var kindNames = [numKinds]string{"matvec", "rows", "tiled"}

// hasShader reports whether a (kind, format) module exists: the mat-vec
// shader is f32's, bf16's and the u32 product's (the quantized formats and
// int8 by f32 rows keep an order of their sums that a subgroup reduction
// would not).
func hasShader(kind, format int) bool {
	return kind != kindMatVec || format <= fmtBF16 || format == fmtU32
}

// quantized reports whether a weight format multiplies q8_0 activation
// rows (MatMulQ).
func quantized(format int) bool { return format == fmtQ8 || format == fmtQ4 }

// matVecRows is the most activation rows the mat-vec shader takes (MAXM).
const matVecRows = 8

func spirv(kind, format int) ([]byte, error) {
	name := "shaders/" + kindNames[kind] + "_" + formatNames[format] + ".spv"
	b, err := shaders.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("vulkan: shader %s: %w", name, err)
	}
	return b, nil
}

func deviceType(t uint32) string {
	switch t {
	case 1:
		return "integrated-gpu"
	case 2:
		return "discrete-gpu"
	case 3:
		return "virtual-gpu"
	case 4:
		return "cpu"
	}
	return "other"
}

// resultName spells a VkResult.
func resultName(r int32) string {
	switch r {
	case 0:
		return "VK_SUCCESS"
	case 1:
		return "library not found"
	case 2:
		return "VK_TIMEOUT"
	case -1:
		return "VK_ERROR_OUT_OF_HOST_MEMORY"
	case -2:
		return "VK_ERROR_OUT_OF_DEVICE_MEMORY"
	case -3:
		return "VK_ERROR_INITIALIZATION_FAILED"
	case -4:
		return "VK_ERROR_DEVICE_LOST"
	case -5:
		return "VK_ERROR_MEMORY_MAP_FAILED"
	case -6:
		return "VK_ERROR_LAYER_NOT_PRESENT"
	case -7:
		return "VK_ERROR_EXTENSION_NOT_PRESENT"
	case -8:
		return "VK_ERROR_FEATURE_NOT_PRESENT"
	case -9:
		return "VK_ERROR_INCOMPATIBLE_DRIVER"
	case -10:
		return "VK_ERROR_TOO_MANY_OBJECTS"
	case -1000069000:
		return "VK_ERROR_OUT_OF_POOL_MEMORY"
	}
	return fmt.Sprintf("VkResult(%d)", r)
}

// ForwardStats count what the whole-forward engine did.
type ForwardStats struct {
	// Recordings counts step command buffers recorded: one per program
	// (a graph and its bindings), at its first Run.
	Recordings int64
	// Runs counts steps, Submits the queue submissions (one a step) and
	// Dispatches the dispatches they replayed.
	Runs, Submits, Dispatches int64
}
