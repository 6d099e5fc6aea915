// Package lower holds what every backend declares about itself: its
// Capabilities record. Each backend package (lower/cpu, lower/gomlx,
// lower/vulkan) exports one whose op lists are derived from its lowering
// tables, so a record cannot drift from the code that lowers; plan's
// NewEngine checks a plan against the records (never a backend's name),
// and tests/opcoverage_test.go checks every record against ir.Ops().
//
// The package imports nothing of gelo: every backend can import it without
// importing another backend.
package lower

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Protection says how a backend runs a protected plan (any level but
// none: the plan's mask is not none).
type Protection uint8

const (
	// Unprotected: the backend refuses protected plans; its engine is the
	// mask-none baseline. Its device may still serve the cpu backend's
	// device side (--backend cpu --device ...).
	Unprotected Protection = iota
	// ProtectedViaDevice: the backend's own engine is the mask-none
	// baseline; a protected plan keeps its TEE side on the cpu backend and
	// sends its device side to this backend's device.
	ProtectedViaDevice
	// Protected: the backend's own engine runs protected plans.
	Protected
)

// Device is the untrusted side a backend package provides to the cpu
// backend (EngineOptions.Device): what --device names it and what its
// matmuls take.
type Device struct {
	// Family is the --device name, or the prefix before a colon of its
	// spellings: "local", "gomlx" (gomlx:go, gomlx:xla:cpu, ...), "vulkan"
	// (vulkan, vulkan:N).
	Family string
	// Names are the spellings --device takes, for messages.
	Names []string
	// Weights are the --weights formats its matmuls take.
	Weights []string
	// Lattice: it runs the lwe level's product (device.Lattice: u32
	// ciphertext rows times a resident int8 weight modulo 2^32).
	Lattice bool
}

// Matches reports whether dev (a --device value) is this device.
func (d Device) Matches(dev string) bool {
	return dev == d.Family || strings.HasPrefix(dev, d.Family+":")
}

// Capabilities is one backend's record: the ops it lowers and those it
// declines with the reason, the plans its own engine takes (weight formats
// by their --weights names, KV dtypes by their --kv-dtype names), how it
// runs protected plans, and the device it provides.
type Capabilities struct {
	// Backend is the --backend name.
	Backend string
	// Lowers lists, sorted, every op the backend lowers: the keys of its
	// lowering tables.
	Lowers []string
	// Declines maps each op the backend refuses by name to the reason its
	// compile reports.
	Declines map[string]string
	// Weights and KVDTypes are the --weights formats and --kv-dtype names
	// its own engine takes.
	Weights, KVDTypes []string
	// Protected says how it runs protected plans.
	Protected Protection
	// Device is the untrusted side it provides to the cpu backend.
	Device Device
}

// Lowered reports whether the backend lowers op.
func (c Capabilities) Lowered(op string) bool {
	_, ok := slices.BinarySearch(c.Lowers, op)
	return ok
}

// Declined returns why the backend refuses op, if it declines it by name.
func (c Capabilities) Declined(op string) (reason string, declined bool) {
	reason, declined = c.Declines[op]
	return reason, declined
}

// TakesWeights reports whether the backend's engine takes the --weights
// format f.
func (c Capabilities) TakesWeights(f string) bool { return slices.Contains(c.Weights, f) }

// TakesKV reports whether the backend's engine takes the --kv-dtype dt.
func (c Capabilities) TakesKV(dt string) bool { return slices.Contains(c.KVDTypes, dt) }

// Check reports what is inconsistent in the record: an unsorted or
// repeated op, an op both lowered and declined, a decline without a
// reason, an empty list of formats or KV dtypes, a device without a
// family.
func (c Capabilities) Check() error {
	var errs []string
	bad := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	if c.Backend == "" {
		bad("no backend name")
	}
	if !slices.IsSorted(c.Lowers) || len(slices.Compact(slices.Clone(c.Lowers))) != len(c.Lowers) {
		bad("Lowers is not sorted without repeats")
	}
	for _, op := range slices.Sorted(maps.Keys(c.Declines)) {
		if c.Lowered(op) {
			bad("op %s is both lowered and declined (%s)", op, c.Declines[op])
		}
		if c.Declines[op] == "" {
			bad("op %s is declined without a reason", op)
		}
	}
	if len(c.Weights) == 0 || len(c.KVDTypes) == 0 {
		bad("no weight format or no KV dtype")
	}
	if c.Device.Family == "" || len(c.Device.Names) == 0 || len(c.Device.Weights) == 0 {
		bad("a device without a family, names or weight formats")
	}
	if len(errs) > 0 {
		return fmt.Errorf("backend %q: %s", c.Backend, strings.Join(errs, "; "))
	}
	return nil
}

// SortedKeys returns the keys of a lowering table, sorted: how a backend
// derives Lowers from its tables.
func SortedKeys[V any](table map[string]V) []string {
	return slices.Sorted(maps.Keys(table))
}

// Union returns the names in any of lists, sorted, each once: Lowers of a
// backend with several tables.
func Union(lists ...[]string) []string {
	u := slices.Concat(lists...)
	slices.Sort(u)
	return slices.Compact(u)
}

// Or joins names as a list in prose: "a", "a or b", "a, b or c".
func Or(names []string) string {
	switch len(names) {
	case 0:
		return "none"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// DeclineAll maps each of ops to reason: a Declines table for ops a
// backend refuses for one reason (the protection ops of a baseline
// engine, ir.ProtectionOps).
func DeclineAll(ops []string, reason string) map[string]string {
	m := make(map[string]string, len(ops))
	for _, op := range ops {
		m[op] = reason
	}
	return m
}
