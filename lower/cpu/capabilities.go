package cpu

import (
	"gelo/formats"
	"gelo/lower"
	"gelo/models"
)

// Capabilities is the cpu backend's record: every op of its tables
// (teeKernels, deviceKernels, storageOps), every weight format and KV
// dtype, protected plans, and the local device (the kernels of this
// package behind the device boundary, the bf16 dot product included).
func Capabilities() lower.Capabilities {
	return lower.Capabilities{
		Backend:   "cpu",
		Lowers:    lower.Union(lower.SortedKeys(teeKernels), lower.SortedKeys(deviceKernels), lower.SortedKeys(storageOps)),
		Weights:   formats.PlanNames(),
		KVDTypes:  kvDTypeNames(),
		Protected: lower.Protected,
		Device: lower.Device{Family: "local", Names: []string{"local"},
			Weights: formats.DeviceNames(formats.DeviceLocal), Lattice: true},
	}
}

// kvDTypeNames are the --kv-dtype names of every cache dtype a trace
// accepts: the cpu kernels read and write all of them.
func kvDTypeNames() []string {
	var ns []string
	for _, dt := range models.KVDTypes {
		ns = append(ns, dt.String())
	}
	return ns
}
