//go:build !xla || !cgo

package gomlx

import "github.com/gomlx/gomlx/backends"

// XLABuilt reports whether this binary links the XLA backend: build with
// -tags xla (and cgo enabled) to link it.
const XLABuilt = false

func newXLA(string) (backends.Backend, error) { return nil, ErrNoXLA }
