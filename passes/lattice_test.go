package passes

import (
	"strings"
	"testing"

	"gelo/ir"
)

func latticeOptions(all bool) ProtectOptions {
	l, _ := LookupLevel(LevelLWE)
	o := l.Options(ProtectOptions{})
	o.OffloadAll = all
	return o
}

// Level lwe with every op offloaded: each device matmul multiplies an
// encode's u32 rows by an int8 weight, each result comes back through a
// decode of its slot, q/k/v and gate/up share one ciphertext, the meta
// names the parameters, and nothing is labelled insecure.
func TestLatticeProtect(t *testing.T) {
	m := traced(t)
	o := latticeOptions(true)
	pm := Pipeline(o)
	if got := strings.Join(pm.Names(), ","); got != "place,fuse,offload,quantize,protect,fuse_epilogue,leakcheck" {
		t.Fatalf("pipeline %s", got)
	}
	if err := pm.Run(m); err != nil {
		t.Fatal(err)
	}
	if m.Meta["security"] != LevelLWE || m.Meta["mask"] != MaskLWE || m.Meta["lwe"] != "q=2^32,lambda=4096,h=80,delta=16" {
		t.Errorf("meta %v", m.Meta)
	}
	if m.Meta["insecure"] != "" {
		t.Errorf("insecure: %q", m.Meta["insecure"])
	}
	g := m.Graph("decode")
	var enc, dev, dec int
	for _, n := range g.Nodes {
		switch {
		case n.Op == ir.OpLWEEncode:
			enc++
		case n.Op == ir.OpLWEDecode:
			dec++
		case n.Place == ir.Device && ir.IsLinear(n.Op):
			dev++
			if g.Node(n.Inputs[0]).Type.DType != ir.U32 || g.Node(n.Inputs[1]).Type.DType != ir.I8 {
				t.Errorf("%v: %v x %v", n.ID, g.Node(n.Inputs[0]).Type, g.Node(n.Inputs[1]).Type)
			}
		case n.Op == ir.OpMask || n.Op == ir.OpToDevice || n.Op == ir.OpShieldStack:
			t.Errorf("%v = %s under lwe", n.ID, n.Op)
		}
	}
	// 2 layers x (qkv, o, gate|up, down) + the LM head, fused: 9 of each.
	if enc != 9 || dev != 9 || dec != 9 {
		t.Errorf("decode graph: %d encodes, %d device matmuls, %d decodes; want 9 each", enc, dev, dec)
	}
}

// Without OffloadAll the cost model keeps qwen3-tiny's 64-wide projections
// in the TEE (a pad costs h (d + d_out) word additions a row, more than a
// 64 x 64 product), and says why; from about 1024 wide every projection
// pays (the lwe suite measured the level with every op offloaded at 50 /
// 67 / 28 % of the TEE-local pass at the 0.6B widths, prefill / B = 16 /
// B = 1, and 12 / 19 / 12 % at the 8B widths, prefill / B = 64 / B = 1).
func TestLatticeOffloadDecision(t *testing.T) {
	m := traced(t)
	if err := Pipeline(latticeOptions(false)).Run(m); err != nil {
		t.Fatal(err)
	}
	why := m.Meta["offload.decode"]
	if !strings.Contains(why, "TEE-local") {
		t.Errorf("offload.decode = %q, want TEE-local reasons", why)
	}
	l, _ := LookupLevel(LevelLWE)
	for _, tc := range []struct {
		d, dout int
		pays    bool
	}{{64, 64, false}, {64, 192, false}, {256, 256, false}, {512, 512, false}, {1024, 4096, true}, {3072, 1024, true}, {1024, 6144, true},
		{4096, 6144, true}, {4096, 24576, true}, {12288, 4096, true}, {4096, 151936, true}} {
		c := CostOf(l, "matmul", 1, tc.d, tc.dout)
		if c.Offload != tc.pays {
			t.Errorf("%d x %d: offload %v, want %v (%s)", tc.d, tc.dout, c.Offload, tc.pays, c.Reason())
		}
		// The local device runs on the TEE's cores: nothing pays there.
		if lc := c.At(1); lc.Offload || !strings.Contains(lc.Reason(), "own cores") {
			t.Errorf("%d x %d on the TEE's own cores: %s", tc.d, tc.dout, lc.Reason())
		}
		if c.At(DeviceSpeedup) != c {
			t.Errorf("%d x %d: At(the default speedup) changed the cost", tc.d, tc.dout)
		}
	}
}

// The level check refuses a module whose crossings are not the level's
// ciphertexts, naming the node: run on a compiled plan edited as an
// attacker who controls the plan file would.
func TestLatticeLevelCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(m *ir.Module)
		want string
	}{
		{"weaker lambda", func(m *ir.Module) {
			for _, n := range m.Graph("decode").Nodes {
				if n.Op == ir.OpLWEEncode {
					n.Attrs["lambda"] = int64(256)
					return
				}
			}
		}, "lambda 256"},
		{"a slot encoded twice", func(m *ir.Module) {
			for _, n := range m.Graph("decode").Nodes {
				if n.Op == ir.OpLWEEncode {
					n.Attrs["slot"] = int64(0)
				}
			}
		}, "encoded already"},
		{"meta parameters", func(m *ir.Module) { m.Meta["lwe"] = "q=2^32,lambda=64,h=6,delta=16" }, "meta lwe"},
		{"plaintext matmul", func(m *ir.Module) {
			g := m.Graph("decode")
			for _, n := range g.Nodes {
				if n.Place == ir.Device && ir.IsLinear(n.Op) {
					n.Inputs[0] = g.Node(n.Inputs[0]).Inputs[0] // the rows the encode read
					return
				}
			}
		}, "not lwe ciphertext rows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := traced(t)
			if err := Pipeline(latticeOptions(true)).Run(m); err != nil {
				t.Fatal(err)
			}
			tc.edit(m)
			err := checkSecurity(m)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("checkSecurity: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// The lwe level takes any plan format for its TEE-local ops (the device's
// is int8) and is chosen by name.
func TestLatticeOptionErrors(t *testing.T) {
	o := latticeOptions(false)
	o.Weights = "q8_0"
	if err := o.Check(); err != nil {
		t.Errorf("lwe with q8_0 in the TEE: %v", err)
	}
	o.Weights = "q9"
	if err := o.Check(); err == nil || !strings.Contains(err.Error(), "q9") {
		t.Errorf("lwe with an unknown format: %v", err)
	}
	o = ProtectOptions{Mask: MaskLWE, Cadence: PerOffload, Weights: "int8"}
	if err := o.Check(); err == nil || !strings.Contains(err.Error(), "--security lwe") {
		t.Errorf("mask lwe without the level: %v", err)
	}
	if got := LevelOf(latticeOptions(false)); got != LevelCustom {
		t.Errorf("LevelOf(lwe's knobs) = %s: lattice levels are chosen by name", got)
	}
}

// TestLatticeWeightsBySide: under lwe a matmul the device runs multiplies
// int8, one kept in the TEE the plan's --weights format, so a plan whose
// ops all stay in the TEE holds no int8 weight (plan's
// TestLatticeTEELocalIsExact: its logits are exact's bits).
func TestLatticeWeightsBySide(t *testing.T) {
	for _, tc := range []struct {
		weights string
		all     bool
		tee     ir.DType // every TEE-local linear op's weight; none when all
	}{{"", false, ir.F32}, {"bf16", false, ir.BF16}, {"q8_0", false, ir.Q8_0}, {"bf16", true, 0}, {"int8", true, 0}} {
		m := traced(t)
		o := latticeOptions(tc.all)
		o.Weights = tc.weights
		if err := Pipeline(o).Run(m); err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		var tee, dev int
		for _, g := range m.Graphs {
			for _, n := range g.Nodes {
				if !ir.IsLinear(n.Op) || len(n.Inputs) < 2 {
					continue
				}
				w := g.Node(n.Inputs[1]).Type.DType
				switch {
				case n.Place == ir.Device && w != ir.I8:
					t.Errorf("%+v: %s %v on the device multiplies %v", tc, g.Name, n.ID, w)
				case n.Place == ir.Device:
					dev++
				case w != tc.tee:
					t.Errorf("%+v: %s %v in the TEE multiplies %v, want %v", tc, g.Name, n.ID, w, tc.tee)
				default:
					tee++
				}
			}
		}
		if tc.all && (dev == 0 || tee != 0) || !tc.all && (tee == 0 || dev != 0) {
			t.Errorf("%+v: %d device and %d TEE-local linear ops", tc, dev, tee)
		}
	}
}
