// Package device is the trust boundary's one contract: the Device
// interface every backend's untrusted side implements (a local one, gomlx,
// later others), and the SpyDevice that wraps any of them and records each
// crossing for the leak tests and the attack harness. The payload formats
// of a quantized plan are in the subpackage wire.
//
// It sits between the passes and the backends in the import flow: lower/*
// implements Device, runtime and the tests wrap it, and it imports neither.
package device

import (
	"strings"

	"gelo/device/wire"
)

// Device is the untrusted side of the boundary: public weights are
// uploaded once, then each device-placed matmul sends its operand rows and
// gets the product back.
type Device interface {
	// Upload makes a public weight [rows, cols] resident on the device.
	Upload(name string, w []float32, rows, cols int) error
	// UploadBF16 makes a public bfloat16 weight resident: half the bytes,
	// the same products (MatMul widens it exactly).
	UploadBF16(name string, w []uint16, rows, cols int) error
	// MatMul computes y[m, rows] = x[m, cols] W^T for a resident f32,
	// bf16 or int8 (wire.Int8, uploaded with UploadQ) weight; op is the IR
	// op that sends it.
	MatMul(op, weight string, x []float32, m int, y []float32) error
	// UploadQ makes a quantized public weight resident: GGUF blocks
	// (multiplied by MatMulQ) or int8 rows with a scale each (multiplied
	// by MatMul over f32 rows: its format's input is not rounded).
	UploadQ(name string, w *wire.Matrix) error
	// MatMulQ multiplies q8_0 activation rows (the payload that crosses in
	// a quantized plan) by a resident quantized weight.
	MatMulQ(op, weight string, x *wire.Activations, y []float32) error
}

// BF16Dotter is a Device that also multiplies bf16 weights by the bf16
// dot product (the bf16dot weight format): MatMul on a weight uploaded
// with UploadBF16Dot rounds its rows to bf16 and accumulates the exact
// pair products in binary32, as the TEE's kernel does. The payload it is
// sent is already bf16-exact, so the product stays within the probes'
// binary32 model.
type BF16Dotter interface {
	UploadBF16Dot(name string, w []uint16, rows, cols int) error
}

// Lattice is a Device that also runs the lwe level's product (package
// lwe): MatMulU32 multiplies m ciphertext rows c [m, cols] of uint32 words
// by a resident int8 weight (wire.Int8, uploaded with UploadQ) modulo
// 2^32, reading the weight's int8 values and ignoring its row scales:
//
//	y[r, j] = sum_i int32(W_q[j, i]) * c[r, i]  mod 2^32.
//
// The sum is exact in the ring, so every order, split and kernel gives the
// same bits: a device's result is checked word for word against the
// portable Go form. The TEE also sends A's columns as rows to compute the
// public hint H^T = (W_q A)^T, which it then checks (lwe.VerifyHints).
//
// A hint computation is a MatMulU32 call whose op is LatticeHintOp: its
// rows are A's public columns, not a payload.
type Lattice interface {
	MatMulU32(op, weight string, c []uint32, m int, y []uint32) error
}

// LatticeHintOp is the op of the MatMulU32 calls that compute an lwe
// plan's public hint H^T = (W_q A)^T at engine start.
const LatticeHintOp = "lwe_hint"

// WeightName is the model weight an uploaded name stands for: the cpu
// backend prefixes a converted weight's name with its format ("bf16:",
// "bf16dot:", "q8_0:", ...), and a model's tensor names hold no colon.
func WeightName(uploaded string) string {
	if i := strings.IndexByte(uploaded, ':'); i >= 0 {
		return uploaded[i+1:]
	}
	return uploaded
}
