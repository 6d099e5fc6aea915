// Package vulkan is a device.Device on Vulkan compute: public weights
// resident in device memory in their plan format (f32, bf16, q8_0 and q4_0
// GGUF blocks, int8 rows), a mat-vec shader for few activation rows and a
// tiled one for many, and each crossing a command buffer recorded once per
// weight, product and row bucket, then replayed. It is also a
// device.Lattice: the lwe level's product of uint32 ciphertext rows by an
// int8 weight modulo 2^32 (shaders/u32.comp), exact, so word for word the
// Go reference's. A crossing is the upload of the operand rows (a staging
// copy where the device memory is not host-visible), the dispatches over
// the weight's parts, the read-back. The row count of a call lives in a small
// host-visible buffer the shaders read, so a recording never holds a
// per-step value.
//
// Forward (forward.go) is the unprotected whole forward on the same
// device: every op of a step a shader, the step one recorded command
// buffer replayed per token.
//
// libvulkan is opened at run time (vk_impl.h, over the vendored
// definitions in vk_min.h): building needs neither Vulkan headers nor a
// driver, and a build without cgo gets a stub whose New reports
// ErrUnavailable. The SPIR-V is generated from shaders/*.comp by go
// generate (glslangValidator) and committed.
package vulkan

//go:generate sh shaders/gen.sh .
