//go:build !cgo

package vulkan

import (
	"fmt"

	"gelo/device"
	"gelo/device/wire"
	"gelo/ir"
	"gelo/models"
)

var (
	_ device.Device  = (*Device)(nil)
	_ device.Lattice = (*Device)(nil)
)

// Device is the stub of a build without cgo: New always fails.
type Device struct{}

var errNoCgo = fmt.Errorf("%w: vulkan: not built with cgo", ErrUnavailable)

// New reports that this build has no Vulkan.
func New(Options) (*Device, error) { return nil, errNoCgo }

func (*Device) Upload(string, []float32, int, int) error               { return errNoCgo }
func (*Device) UploadBF16(string, []uint16, int, int) error            { return errNoCgo }
func (*Device) MatMul(string, string, []float32, int, []float32) error { return errNoCgo }
func (*Device) UploadQ(string, *wire.Matrix) error                     { return errNoCgo }
func (*Device) MatMulQ(string, string, *wire.Activations, []float32) error {
	return errNoCgo
}
func (*Device) MatMulU32(string, string, []uint32, int, []uint32) error { return errNoCgo }

// Close does nothing.
func (*Device) Close() {}

// Info, Stats and ValidationErrors are empty.
func (*Device) Info() Info                      { return Info{} }
func (*Device) Stats() Stats                    { return Stats{} }
func (*Device) ValidationErrors() (int, string) { return 0, "" }

// Forward is the stub of a build without cgo: NewForward always fails.
type Forward struct{}

// ForwardProgram is the stub's program type.
type ForwardProgram struct{}

// NewForward reports that this build has no Vulkan.
func NewForward(Options, *models.Weights) (*Forward, error) { return nil, errNoCgo }

func (*Forward) Name() string                                               { return "vulkan-forward" }
func (*Forward) Compile(*ir.Graph, map[string]int) (*ForwardProgram, error) { return nil, errNoCgo }
func (*Forward) Close()                                                     {}
func (*Forward) Info() Info                                                 { return Info{} }
func (*Forward) Stats() ForwardStats                                        { return ForwardStats{} }
func (*Forward) SyncCaches() error                                          { return errNoCgo }
func (*Forward) ValidationErrors() (int, string)                            { return 0, "" }

func (*ForwardProgram) Float32(string) ([]float32, error)   { return nil, errNoCgo }
func (*ForwardProgram) Int32(string) ([]int32, error)       { return nil, errNoCgo }
func (*ForwardProgram) Elems(string) (int, error)           { return 0, errNoCgo }
func (*ForwardProgram) BindFloat32(string, []float32) error { return errNoCgo }
func (*ForwardProgram) Run() error                          { return errNoCgo }

// loweredOps is empty: a build without cgo lowers nothing.
func loweredOps() []string { return nil }
