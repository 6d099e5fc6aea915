package models

import (
	"errors"
	"math/bits"
)

// ErrOverflow is a size computation that does not fit in an int64.
var ErrOverflow = errors.New("size overflows int64")

// Mul multiplies non-negative sizes, failing instead of wrapping.
func Mul(xs ...int) (int64, error) {
	p := uint64(1)
	for _, x := range xs {
		if x < 0 {
			return 0, errors.New("negative size")
		}
		hi, lo := bits.Mul64(p, uint64(x))
		if hi != 0 || lo > 1<<63-1 {
			return 0, ErrOverflow
		}
		p = lo
	}
	return int64(p), nil
}

// Add adds non-negative sizes, failing instead of wrapping.
func Add(xs ...int64) (int64, error) {
	var s int64
	for _, x := range xs {
		if x < 0 || s > 1<<63-1-x {
			return 0, ErrOverflow
		}
		s += x
	}
	return s, nil
}
