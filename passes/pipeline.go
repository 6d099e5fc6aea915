package passes

import "gelo/formats"

// Pipeline returns the standard pass order for the given protection:
// place, fuse, (offload,) quantize, protect, fuse_epilogue, (verify-probes,)
// leakcheck. Leakcheck cannot be left out; it
// tolerates plaintext crossings only for mask none, which the module
// then says. noFuse switches fusions off by name.
func Pipeline(o ProtectOptions, noFuse ...string) *Manager {
	ps := []Pass{Place(DefaultPolicy()), Fuse(noFuse)}
	if l := o.level(); l.FullSpan || l.Lattice() {
		ps = append(ps, Offload(o))
	}
	q := Quantize(o.Weights)
	if o.level().Lattice() {
		q = QuantizeLattice(o.Weights, formats.Int8)
	}
	ps = append(ps, q, Protect(o), FuseEpilogue(noFuse))
	if o.Verify > 0 {
		ps = append(ps, Probes(o.Verify, o.probePool()))
	}
	return &Manager{Passes: append(ps, Leakcheck(o.Mask == MaskNone))}
}

// Unfused is every fusion's name: Pipeline(o, Unfused()...) is the
// reference the fusion gate tests compare against.
func Unfused() []string { return FusionNames() }
