package passes

import (
	"strings"
	"testing"

	"gelo/ir"
	"gelo/models"
)

func traced(t *testing.T) *ir.Module {
	t.Helper()
	cfg, _ := models.Variant("qwen3-tiny")
	m, err := models.Trace(cfg, models.TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestPipelineOrderAndMeta(t *testing.T) {
	for _, po := range []ProtectOptions{DefaultProtect(), {Mask: MaskNone, Cadence: PerForward}} {
		m := traced(t)
		pm := Pipeline(po)
		if got := strings.Join(pm.Names(), ","); got != "place,fuse,quantize,protect,fuse_epilogue,leakcheck" {
			t.Fatalf("pipeline %s, want place,fuse,quantize,protect,fuse_epilogue,leakcheck", got)
		}
		if err := pm.Run(m); err != nil {
			t.Fatal(err)
		}
		// Every shipped level is labelled insecure: mask none sends plaintext,
		// and haar and hd3 leave the row space visible (the attack harness).
		insecure := m.Meta["insecure"]
		if po.Mask == MaskNone && !strings.Contains(insecure, "plaintext") {
			t.Errorf("baseline does not say it is insecure: %q", insecure)
		}
		if po.Mask != MaskNone && !strings.Contains(insecure, "row space") {
			t.Errorf("mask %s is not labelled with the row-space break: %q", po.Mask, insecure)
		}
	}
}

// TestProtectInsertsBoundary checks that every device op reads only
// public values and every device result returns through unmask, and that
// an unfused Qwen3 block makes 7 device matmuls behind 4 crossings (Q/K/V
// share one); fused, 4 matmuls with one mask and one unmask each.
func TestProtectInsertsBoundary(t *testing.T) {
	for _, fused := range []bool{false, true} {
		m := traced(t)
		var off []string
		if !fused {
			off = Unfused()
		}
		if err := Pipeline(DefaultProtect(), off...).Run(m); err != nil {
			t.Fatal(err)
		}
		masks, unmasks := countBoundary(t, m.Graph("decode"))
		// 2 layers x (QKV, O, gate|up, down) + LM head = 9 crossings out;
		// back: 2 x 7 + 1 = 15 unfused, 2 x 4 + 1 = 9 fused.
		want := 15
		if fused {
			want = 9
		}
		if masks != 9 || unmasks != want {
			t.Errorf("fused=%v: decode has %d masks and %d unmasks, want 9 and %d", fused, masks, unmasks, want)
		}
		s := Summarize(m)
		if got := s.Graphs[1].DeviceMatmulsPerBlock[0]; fused && got != 4 || !fused && got != 7 {
			t.Errorf("fused=%v: %d device matmuls in block 0", fused, got)
		}
	}
}

func countBoundary(t *testing.T, g *ir.Graph) (masks, unmasks int) {
	for _, n := range g.Nodes {
		switch n.Op {
		case "mask":
			masks++
		case "unmask":
			unmasks++
		}
		if n.Place == ir.Device && n.Op != "weight" {
			for _, in := range n.Inputs {
				if g.Node(in).Secrecy == ir.Secret {
					t.Errorf("%v = %s reads secret %v", n.ID, n.Op, in)
				}
			}
		}
	}
	return masks, unmasks
}

// TestLeakcheckRefusesMisplacedGraph moves a TEE op onto the device after
// protection, so a secret reaches the device unmasked; leakcheck must
// refuse and name the node. A secret-indexed gather on the device is
// refused too, and neither can be waved through as "insecure".
func TestLeakcheckRefusesMisplacedGraph(t *testing.T) {
	cases := []struct {
		op, want string
	}{
		{"add", "on the device, reads secret"},
		{"embed", "secret-indexed gather placed on the device"},
	}
	for _, tc := range cases {
		for _, allowInsecure := range []bool{false, true} {
			m := traced(t)
			if err := (&Manager{Passes: []Pass{Place(DefaultPolicy()), Protect(DefaultProtect())}}).Run(m); err != nil {
				t.Fatal(err)
			}
			g := m.Graph("prefill")
			var victim *ir.Node
			for _, n := range g.Nodes {
				if n.Op == tc.op {
					victim = n
					break
				}
			}
			victim.Place = ir.Device
			// Even the baseline's allowance does not cover it: the moved op's
			// result also reaches TEE ops without unmask.
			err := Leakcheck(allowInsecure).Run(m)
			if err == nil {
				t.Fatalf("%s on the device: leakcheck passed", tc.op)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) || !strings.Contains(msg, victim.ID.String()+" = "+tc.op) {
				t.Errorf("%s on the device: error %q does not name the node and say %q", tc.op, msg, tc.want)
			}
		}
	}
}

func TestLeakcheckRefusesUnmaskedReturn(t *testing.T) {
	m := traced(t)
	if err := (&Manager{Passes: []Pass{Place(DefaultPolicy())}}).Run(m); err != nil {
		t.Fatal(err)
	}
	// Without protect, device results flow straight into TEE ops.
	err := Leakcheck(true).Run(m)
	if err == nil || !strings.Contains(err.Error(), "without unmask") {
		t.Fatalf("unprotected placed graph: %v", err)
	}
}

func TestProtectOptionErrors(t *testing.T) {
	cases := []struct {
		o    ProtectOptions
		want string
	}{
		{ProtectOptions{Mask: "rot13", Cadence: PerForward}, `--mask "rot13"`},
		{ProtectOptions{Mask: MaskHD3, Cadence: "sometimes", ShieldK: 8, ShieldEnergy: 4}, `--cadence "sometimes"`},
		{ProtectOptions{Mask: MaskHD3, Cadence: PerForward, ShieldK: 4, ShieldEnergy: 4}, "at least 8"},
		{ProtectOptions{Mask: MaskHaar, Cadence: PerForward, ShieldK: 8, ShieldEnergy: -1}, "energy"},
	}
	for _, tc := range cases {
		err := tc.o.Check()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
}

func TestDumpAfterUnknownPass(t *testing.T) {
	pm := Pipeline(DefaultProtect())
	pm.DumpAfter = map[string]bool{"vectorize": true}
	if err := pm.Run(traced(t)); err == nil || !strings.Contains(err.Error(), "no such pass") {
		t.Errorf("dump after an unknown pass: %v", err)
	}
}

func TestPerOffloadSlots(t *testing.T) {
	m := traced(t)
	if err := Pipeline(ProtectOptions{Mask: MaskHaar, Cadence: PerOffload, ShieldK: 8, ShieldEnergy: 4}).Run(m); err != nil {
		t.Fatal(err)
	}
	slots := map[int64]bool{}
	for _, n := range m.Graph("decode").Nodes {
		if n.Op == "mask" {
			s, _ := n.Attrs.Int("slot")
			if slots[s] {
				t.Errorf("per-offload reuses slot %d", s)
			}
			slots[s] = true
		}
	}
}
