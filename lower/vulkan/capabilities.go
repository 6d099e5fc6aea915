package vulkan

import (
	"maps"

	"gelo/formats"
	"gelo/ir"
	"gelo/lower"
)

// declinedProtection is why the whole-forward engine refuses the
// protection ops.
const declinedProtection = "protected graphs are not supported (the whole-forward engine is the mask-none baseline)"

// declined are the ops the whole-forward engine refuses by name, each
// with the reason Compile reports.
var declined = lower.DeclineAll(ir.ProtectionOps(), declinedProtection)

// Capabilities is the vulkan backend's record. Its own engine is Forward,
// the whole unprotected step as one command buffer: the ops of lowerings
// (none in a build without cgo, where Forward is a stub), the protection
// ops declined, weights in f32, bf16, q8_0 and q4_0 (the formats with a
// shader, matWeight) and an f32 KV cache. It refuses protected plans: their
// device side runs on Device under the cpu backend (--device vulkan),
// which takes the formats formats.DeviceNames lists for it (UploadQ has
// no q4_k shader; Device is no device.BF16Dotter) and runs the lwe level's
// product (Device is a device.Lattice: MatMulU32, u32.comp).
func Capabilities() lower.Capabilities {
	return lower.Capabilities{
		Backend:   "vulkan",
		Lowers:    loweredOps(),
		Declines:  maps.Clone(declined),
		Weights:   []string{formats.F32, formats.BF16, formats.Q8_0, formats.Q4_0},
		KVDTypes:  []string{ir.F32.String()},
		Protected: lower.Unprotected,
		Device: lower.Device{Family: "vulkan", Names: []string{"vulkan", "vulkan:N"},
			Weights: formats.DeviceNames(formats.DeviceVulkan), Lattice: true},
	}
}
