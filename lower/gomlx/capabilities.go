package gomlx

import (
	"maps"

	"gelo/formats"
	"gelo/ir"
	"gelo/lower"
)

// declinedProtection is why whole-forward lowering refuses the protection
// ops: it is the mask-none baseline.
const declinedProtection = "protected graphs are not supported (whole-forward lowering is the mask-none baseline)"

// forwardDeclined are the ops a whole-forward program refuses by name,
// each with the reason Compile reports.
var forwardDeclined = lower.DeclineAll(ir.ProtectionOps(), declinedProtection)

// Capabilities is the gomlx backend's record. Its own engine is Forward,
// the whole unprotected forward as one graph: the ops of forwardLowerings,
// the protection ops declined (forwardDeclined), f32 and bf16 weights
// (bf16 rounded at upload as the cpu backend rounds them, planValues; a
// value in a block format is refused at compile) and an f32 KV cache (its
// cache inputs are f32). A protected plan keeps its TEE side on the cpu
// backend and sends its matmuls to Device, which takes every format but
// the bf16 dot product's (block formats are expanded to f32 at upload,
// UploadQ; Device is no device.BF16Dotter) and runs the lwe level's
// product (Device is a device.Lattice: MatMulU32, int8 limb products).
func Capabilities() lower.Capabilities {
	return lower.Capabilities{
		Backend:   "gomlx",
		Lowers:    lower.SortedKeys(forwardLowerings),
		Declines:  maps.Clone(forwardDeclined),
		Weights:   []string{formats.F32, formats.BF16},
		KVDTypes:  []string{ir.F32.String()},
		Protected: lower.ProtectedViaDevice,
		Device: lower.Device{Family: "gomlx", Names: []string{"gomlx:go", "gomlx:xla:cpu", "gomlx:xla:cuda"},
			Weights: formats.DeviceNames(formats.DeviceGomlx), Lattice: true},
	}
}
