package ir

import (
	"os"
	"strings"
	"testing"
)

// Every op declares its class: the placement table has no entry for an op
// without one, so a forgotten class is a compile error, not a silent
// placement.
func TestEveryOpHasAClass(t *testing.T) {
	for _, op := range Ops() {
		if op == testAttrsOp {
			continue
		}
		if c := ClassOf(op); c == ClassNone {
			t.Errorf("op %s declares no class", op)
		}
	}
}

func TestOpFacts(t *testing.T) {
	for _, tc := range []struct {
		op      string
		result  Result
		aliases []int
		linear  bool
	}{
		{OpMatMul, Fresh, nil, true},
		{OpLMHead, Fresh, nil, true},
		{OpKVAppend, InPlace, []int{0}, false},
		{OpNormRopeAppend, InPlace, []int{0}, false},
		{OpNormRopeAppendKV, InPlace, []int{0, 1}, false},
		{OpTake, View, []int{0}, false},
		{OpWeight, Resident, nil, false},
		{OpConcatWeights, Resident, nil, false},
		{OpAdd, Fresh, nil, false},
	} {
		info := Op(tc.op)
		if info.Result != tc.result || len(info.Aliases) != len(tc.aliases) || IsLinear(tc.op) != tc.linear {
			t.Errorf("%s: result %v aliases %v linear %v, want %v %v %v", tc.op, info.Result, info.Aliases,
				IsLinear(tc.op), tc.result, tc.aliases, tc.linear)
		}
		for i := range tc.aliases {
			if info.Aliases[i] != tc.aliases[i] {
				t.Errorf("%s: aliases %v, want %v", tc.op, info.Aliases, tc.aliases)
			}
		}
	}
}

// Storage resolves KV-cache writes to their cache and takes of a cache
// pair to the pair's K or V cache; other values are their own storage.
func TestStorage(t *testing.T) {
	b := newBuilder(t, "g", "n")
	kc := b.in("k.0", T(F32, 1, 8, 16))
	vc := b.in("v.0", T(F32, 1, 8, 16))
	x := b.in("x", T(F32, "n", 16))
	seq := b.in("seq", T(I32, "n"))
	pos := b.in("pos", T(I32, "n"))
	w := b.w("w", 16)
	k1 := b.op(OpKVAppend, nil, kc, x, seq, pos)
	k2 := b.op(OpKVAppend, nil, k1, x, seq, pos)
	pair := b.op(OpNormRopeAppendKV, Attrs{"heads": int64(1), "head_dim": int64(16), "eps": 1e-6, "theta": 1e4},
		kc, vc, x, x, w, seq, pos)
	tk := b.op(OpTake, Attrs{"index": int64(0)}, pair)
	tv := b.op(OpTake, Attrs{"index": int64(1)}, pair)
	sum := b.op(OpAddRMSNorm, Attrs{"eps": 1e-6}, x, x, w)
	ts := b.op(OpTake, Attrs{"index": int64(1)}, sum)
	for _, tc := range []struct{ v, want ValueID }{
		{k1, kc}, {k2, kc}, {tk, kc}, {tv, vc}, {ts, ts}, {sum, sum}, {x, x},
	} {
		if got := Storage(b.g, tc.v); got != tc.want {
			t.Errorf("Storage(%v) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

func TestDTypeRecord(t *testing.T) {
	for _, tc := range []struct {
		d     DType
		n     int
		bytes int
	}{
		{F32, 64, 256}, {BF16, 64, 128}, {F16, 64, 128}, {I32, 64, 256}, {Q8_0, 64, 68}, {Q4_0, 64, 36}, {Q4_K, 512, 288}, {I8, 64, 64}, {U32, 64, 256},
	} {
		if got := tc.d.Bytes(tc.n); got != tc.bytes {
			t.Errorf("%v.Bytes(%d) = %d, want %d", tc.d, tc.n, got, tc.bytes)
		}
		if got, err := ParseDType(tc.d.String()); err != nil || got != tc.d {
			t.Errorf("ParseDType(%q) = %v, %v", tc.d.String(), got, err)
		}
	}
	if len(DTypes()) != 9 {
		t.Errorf("DTypes() = %v", DTypes())
	}
	// A matrix counts each row's per-row bytes (I8's float32 scale) on
	// top of its elements; no other dtype has any.
	for _, tc := range []struct {
		d          DType
		rows, cols int
		bytes      int
	}{{I8, 3, 64, 3 * 68}, {Q8_0, 3, 64, 3 * 68}, {BF16, 3, 64, 3 * 128}, {Q4_K, 2, 256, 2 * 144}} {
		if got := tc.d.MatrixBytes(tc.rows, tc.cols); got != tc.bytes {
			t.Errorf("%v.MatrixBytes(%d, %d) = %d, want %d", tc.d, tc.rows, tc.cols, got, tc.bytes)
		}
	}
}

// The grammar comment of Print lists every dtype.
func TestGrammarNamesEveryDType(t *testing.T) {
	b, err := os.ReadFile("print.go")
	if err != nil {
		t.Fatal(err)
	}
	_, line, _ := strings.Cut(string(b), "// dtype is ")
	line, _, _ = strings.Cut(line, ";")
	src := " " + strings.NewReplacer(",", " ").Replace(line)
	for _, d := range DTypes() {
		if !strings.Contains(src, " "+d.String()) {
			t.Errorf("print.go's grammar comment omits dtype %v", d)
		}
	}
}

func TestMaskFamilies(t *testing.T) {
	if got := OrList(MaskFamilyNames()); got != "haar or hd3" {
		t.Errorf("families %q", got)
	}
	hd3, _ := LookupMaskFamily(FamilyHD3)
	haar, _ := LookupMaskFamily(FamilyHaar)
	for _, tc := range []struct {
		f          MaskFamily
		n, minK, k int
	}{
		{hd3, 1, 8, 15}, {hd3, 8, 8, 8}, {hd3, 2040, 8, 8}, {hd3, 2041, 8, 2055}, {haar, 5, 8, 8}, {haar, 100, 12, 12},
	} {
		if got := tc.f.ShieldRows(tc.n, tc.minK); got != tc.k {
			t.Errorf("%s.ShieldRows(%d, %d) = %d, want %d", tc.f.Name, tc.n, tc.minK, got, tc.k)
		}
	}
	g := newBuilder(t, "g")
	x := g.in("x", T(F32, 4, 8))
	p := g.in(PassInput, T(I32, 2))
	if _, err := g.g.Add(OpMask, Attrs{"family": "nope", "slot": int64(0)}, x, p); err == nil || !strings.Contains(err.Error(), "unknown mask family") {
		t.Errorf("mask of an unknown family: %v", err)
	}
}
