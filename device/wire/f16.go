package wire

import "github.com/x448/float16"

// f32ToF16 converts f to IEEE binary16 with round-to-nearest-even, the
// rounding of ggml's GGML_FP32_TO_FP16 (F16C VCVTPS2PH with mode 0):
// values at or beyond 65520 in magnitude become infinities, NaNs quiet
// NaNs, tiny values subnormals or zero. x448/float16 is the one f16
// conversion of the module (it matched the former hand-written copy on all
// 2^32 inputs).
func f32ToF16(f float32) uint16 { return float16.Fromfloat32(f).Bits() }

// f16ToF32 converts an IEEE binary16 to float32 exactly (as F16C's
// VCVTPH2PS: NaNs come back quiet with their payload kept).
func f16ToF32(h uint16) float32 { return float16.Frombits(h).Float32() }
