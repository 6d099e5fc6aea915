package planfile

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"gelo/formats"
	"gelo/ir"
	"gelo/models"
	"gelo/passes"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var (
	testPlanOnce sync.Once
	testPlanData []byte
	testPlanErr  error
)

// fakeIdentity is a JSON object with a digest member, as the identity section must be.
func fakeIdentity(seed string) (string, []byte) {
	sum := sha256.Sum256([]byte(seed))
	d := hex.EncodeToString(sum[:])
	return d, []byte(`{"digest":"` + d + `","config":"` + d + `"}`)
}

// newTestPlan compiles qwen3-tiny with the default protection into a plan.
func newTestPlan(tb testing.TB, po passes.ProtectOptions, noFuse ...string) *Plan {
	tb.Helper()
	cfg, err := models.Variant("qwen3-tiny")
	if err != nil {
		tb.Fatal(err)
	}
	m, err := models.Trace(cfg, models.TraceOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	m.Meta["model"] = "qwen3-tiny"
	m.Meta["seed"] = "1"
	if err := passes.Pipeline(po, noFuse...).Run(m); err != nil {
		tb.Fatal(err)
	}
	var fusions []string
	if f := m.Meta["fusions"]; f != "none" && f != "" {
		fusions = strings.Split(f, ",")
	}
	if t := m.Meta["topology"]; t != "" {
		po.Topology = t
	}
	d, id := fakeIdentity("qwen3-tiny/1")
	p := &Plan{
		Backend: "cpu",
		Source:  Source{Kind: SourceVariant, Name: "qwen3-tiny", Seed: 1, SynthDType: "bf16"},
		Passes: Passes{
			Pipeline: strings.Split(m.Meta["passes"], ","),
			Security: m.Meta["security"],
			Mask:     po.Mask, Cadence: po.Cadence, Topology: po.Topology,
			ShieldK: po.ShieldK, ShieldEnergy: po.ShieldEnergy, Center: po.Center,
			Fusions:      fusions,
			WeightFormat: m.Meta["weights"],
			Verify:       po.Verify,
		},
		IdentityDigest: d,
		Identity:       id,
		Config:         cfg.JSON(),
	}
	if po.Verify > 0 {
		p.Passes.VerifyPool, _ = strconv.Atoi(m.Meta["verify_pool"])
	}
	p.SetModule(m)
	return p
}

// testPlan returns the encoded default test plan (built once).
func testPlan(tb testing.TB) []byte {
	tb.Helper()
	testPlanOnce.Do(func() {
		defer func() {
			if r := recover(); r != nil {
				testPlanErr = fmt.Errorf("%v", r)
			}
		}()
		testPlanData = Encode(newTestPlan(tb, passes.DefaultProtect()))
	})
	if testPlanErr != nil {
		tb.Fatal(testPlanErr)
	}
	return testPlanData
}

var planCmp = []cmp.Option{cmpopts.EquateEmpty()}

func TestRoundTrip(t *testing.T) {
	for _, po := range []passes.ProtectOptions{
		passes.DefaultProtect(),
		{Mask: passes.MaskNone, Cadence: passes.PerForward},
		{Mask: passes.MaskHaar, Cadence: passes.PerOffload, ShieldK: 9, ShieldEnergy: 2.5, Topology: passes.Shared},
		{Mask: passes.MaskHD3, Cadence: passes.PerForward, ShieldK: 8, ShieldEnergy: 4, Weights: formats.Q8_0},
	} {
		roundTrip(t, newTestPlan(t, po))
	}
	// Unfused: the IR says fusions "none", the meta section an empty list.
	p := newTestPlan(t, passes.DefaultProtect(), passes.Unfused()...)
	if len(p.Passes.Fusions) != 0 {
		t.Fatalf("unfused plan lists fusions %v", p.Passes.Fusions)
	}
	roundTrip(t, p)
}

func roundTrip(t *testing.T, p *Plan) {
	t.Helper()
	po := p.Passes
	b := Encode(p)
	q, err := Decode(b)
	if err != nil {
		t.Fatalf("%+v: Decode(Encode(p)): %v", po, err)
	}
	if d := cmp.Diff(p, q, planCmp...); d != "" {
		t.Fatalf("%+v: round trip differs (-want +got):\n%s", po, d)
	}
	if again := Encode(q); !bytes.Equal(again, b) {
		t.Fatalf("%+v: Encode(Decode(b)) differs from b", po)
	}
	d := q.Digest()
	if want := sha256.Sum256(b[:len(b)-32]); d != want || !bytes.Equal(b[len(b)-32:], d[:]) {
		t.Fatalf("Digest() = %x, want the trailer, the hash of the file before it (%x)", d, want)
	}
	m, err := q.Module()
	if err != nil {
		t.Fatal(err)
	}
	if ir.Digest(m) != q.IRDigest || len(q.Phases) != 2 || q.Phases[0].Name != "prefill" || q.Phases[1].Name != "decode" {
		t.Fatalf("module digest %s / phases %+v do not match the plan", ir.Digest(m), q.Phases)
	}
}

func TestDeterministic(t *testing.T) {
	a := Encode(newTestPlan(t, passes.DefaultProtect()))
	b := Encode(newTestPlan(t, passes.DefaultProtect()))
	if !bytes.Equal(a, b) {
		t.Fatal("two encodes of the same compile differ")
	}
	// A nil and an empty fusion list are the same plan.
	p := newTestPlan(t, passes.DefaultProtect())
	p.Passes.Fusions = nil
	q := newTestPlan(t, passes.DefaultProtect())
	q.Passes.Fusions = []string{}
	if !bytes.Equal(Encode(p), Encode(q)) {
		t.Fatal("empty and nil fusion lists encode differently")
	}
}

func TestLayout(t *testing.T) {
	b := testPlan(t)
	infos, trailer, err := Layout(b)
	if err != nil {
		t.Fatal(err)
	}
	if trailer != len(b)-32 || len(infos) != 4 || infos[0].Offset != headerLen {
		t.Fatalf("layout %+v, trailer %d of %d", infos, trailer, len(b))
	}
	for i, s := range infos {
		if s.Name != sectionNames[i] || s.Length == 0 {
			t.Errorf("section %d: %+v", i, s)
		}
	}
}

// region names the part of the file a byte offset lies in, and what an error about a flip
// there must say.
func region(infos []SectionInfo, trailer, pos int) (string, []string) {
	switch {
	case pos < 8:
		return "magic", []string{"header: wrong magic"}
	case pos < 12:
		return "version", []string{"header: format version"}
	case pos < 16:
		return "count", []string{"header: section count"}
	case pos < headerLen:
		i := (pos - fixedLen) / entryLen
		within := (pos - fixedLen) % entryLen
		s := infos[i]
		switch {
		case within < nameLen:
			return "table name " + s.Name, []string{"header: section table entry " + fmt.Sprint(i)}
		case within < nameLen+8:
			// A wrong length shows up as a truncated section, leftover bytes, or a
			// digest mismatch of this or a later section.
			return "table length " + s.Name, []string{"truncated", "unexpected bytes", "digest mismatch"}
		default:
			return "table digest " + s.Name, []string{"section " + s.Name + ": digest mismatch: header says"}
		}
	case pos >= trailer:
		return "trailer", []string{"trailer: plan digest mismatch"}
	}
	for _, s := range infos {
		if pos >= s.Offset && pos < s.Offset+s.Length {
			return "body " + s.Name, []string{"section " + s.Name + ": digest mismatch: header says sha256:"}
		}
	}
	return "?", nil
}

// TestEveryByteFlip flips every byte of a plan, one at a time: each must be refused with a
// message naming the part that did not match.
func TestEveryByteFlip(t *testing.T) {
	b := testPlan(t)
	infos, trailer, err := Layout(b)
	if err != nil {
		t.Fatal(err)
	}
	step := 1
	if testing.Short() {
		step = 3 // still lands in every region: the smallest (version, count) are 4 bytes
	}
	buf := bytes.Clone(b)
	seen := map[string]int{}
	for pos := 0; pos < len(b); pos += step {
		buf[pos] ^= 0x20
		_, err := Decode(buf)
		buf[pos] = b[pos]
		where, wants := region(infos, trailer, pos)
		seen[strings.Fields(where)[0]]++
		if err == nil {
			t.Fatalf("flip at %d (%s) accepted", pos, where)
		}
		var pe *Error
		if !errors.As(err, &pe) {
			t.Fatalf("flip at %d (%s): error %T is not a *planfile.Error: %v", pos, where, err, err)
		}
		ok := false
		for _, w := range wants {
			ok = ok || strings.Contains(err.Error(), w)
		}
		if !ok || !strings.HasPrefix(err.Error(), "plan file: ") {
			t.Fatalf("flip at %d (%s): %q does not say %q", pos, where, err, wants)
		}
	}
	for _, r := range []string{"magic", "version", "count", "table", "body", "trailer"} {
		if seen[r] == 0 {
			t.Errorf("no flip landed in %s", r)
		}
	}
}

func TestTruncatedAndTrailing(t *testing.T) {
	b := testPlan(t)
	infos, _, _ := Layout(b)
	cases := map[int]string{
		0:                                 "truncated",
		5:                                 "truncated",
		13:                                "truncated",
		headerLen - 1:                     "truncated",
		infos[3].Offset + 10:              "section ir: truncated",
		infos[2].Offset + 1:               "section config: truncated",
		len(b) - 1:                        "trailer: truncated",
		infos[1].Offset + infos[1].Length: "truncated",
	}
	for n, want := range cases {
		_, err := Decode(b[:n])
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("truncated to %d bytes: %v, want %q", n, err, want)
		}
	}
	_, err := Decode(append(bytes.Clone(b), 0))
	if err == nil || !strings.Contains(err.Error(), "unexpected bytes after section ir") {
		t.Errorf("one trailing byte: %v", err)
	}
}

// reseal recomputes every section digest and the trailer after a body was edited, so that
// the content checks behind the digests are reached.
func reseal(p *Plan, edit func(bodies [][]byte) [][]byte) []byte {
	b := Encode(p)
	infos, _, _ := Layout(b)
	var bodies [][]byte
	for _, s := range infos {
		bodies = append(bodies, bytes.Clone(b[s.Offset:s.Offset+s.Length]))
	}
	return assemble(edit(bodies))
}

func assemble(bodies [][]byte) []byte {
	var out []byte
	out = append(out, Magic...)
	out = binary.BigEndian.AppendUint32(out, FormatVersion)
	out = binary.BigEndian.AppendUint32(out, uint32(len(bodies)))
	for i, body := range bodies {
		var name [nameLen]byte
		copy(name[:], sectionNames[i%len(sectionNames)])
		out = append(out, name[:]...)
		out = binary.BigEndian.AppendUint64(out, uint64(len(body)))
		sum := sha256.Sum256(body)
		out = append(out, sum[:]...)
	}
	for _, body := range bodies {
		out = append(out, body...)
	}
	sum := sha256.Sum256(out)
	return append(out, sum[:]...)
}

func TestContentChecks(t *testing.T) {
	base := newTestPlan(t, passes.DefaultProtect())
	replaceIn := func(section int, old, new string) func([][]byte) [][]byte {
		return func(b [][]byte) [][]byte {
			if !bytes.Contains(b[section], []byte(old)) {
				t.Fatalf("section %d lacks %q", section, old)
			}
			b[section] = bytes.Replace(b[section], []byte(old), []byte(new), 1)
			return b
		}
	}
	m, _ := base.Module()
	otherDigest := ir.GraphDigest(m.Graphs[1])
	cases := []struct {
		name string
		edit func([][]byte) [][]byte
		want string
	}{
		{"meta not json", func(b [][]byte) [][]byte { b[0] = []byte("{"); return b }, "section meta: not valid meta JSON"},
		{"meta unknown field", replaceIn(0, `{"backend"`, `{"x":1,"backend"`), "section meta: not valid meta JSON: json: unknown field"},
		{"meta not canonical", replaceIn(0, `"backend":"cpu"`, `"backend": "cpu"`), "section meta: not in canonical form"},
		{"meta trailing", func(b [][]byte) [][]byte { b[0] = append(b[0], " {}"...); return b }, "section meta: trailing data"},
		{"meta backend", replaceIn(0, `"backend":"cpu"`, `"backend":"CPU!"`), "section meta: backend"},
		{"meta kind", replaceIn(0, `"kind":"variant"`, `"kind":"url"`), "section meta: source.kind"},
		{"meta mask", replaceIn(0, `"mask":"hd3"`, `"mask":"rot13"`), `section meta: passes: --mask "rot13"`},
		{"meta energy", replaceIn(0, `"shield_energy":"4"`, `"shield_energy":"four"`), "passes.shield_energy"},
		{"meta energy form", replaceIn(0, `"shield_energy":"4"`, `"shield_energy":"4.0"`), "not in canonical form"},
		{"meta fusions null", replaceIn(0, `"fusions":[`, `"fusions":null,"x":[`), "section meta: not valid meta JSON"},
		{"meta fusions", replaceIn(0, `"fusions":["norm_rope_append",`, `"fusions":[`), `section ir: meta fusions is "norm_rope_append,add_rms_norm,concat_proj,swiglu", the meta section says "add_rms_norm,concat_proj,swiglu"`},
		{"meta fusions repeated", replaceIn(0, `"fusions":["norm_rope_append",`, `"fusions":["swiglu",`), `passes.fusions[3] "swiglu" is empty, not a name, or repeated`},
		{"meta identity digest", replaceIn(0, `"identity_digest":"`, `"identity_digest":"x`), "identity_digest"},
		{"meta phase digest", replaceIn(0, otherDigest, "sha256:"+strings.Repeat("0", 64)), "section ir: phase decode: digest mismatch: meta says sha256:0000"},
		{"meta ir digest", replaceIn(0, `"ir_digest":"sha256:`, `"ir_digest":"sha256:f`), "ir_digest"},
		{"identity digest", replaceIn(1, `{"digest":"`, `{"digest":"0`), "section identity: digest mismatch: meta says identity"},
		{"identity not json", func(b [][]byte) [][]byte { b[1] = []byte("nope"); return b }, "section identity: not valid JSON"},
		{"identity no digest", func(b [][]byte) [][]byte { b[1] = []byte("{}"); return b }, `section identity: has no "digest"`},
		{"config", replaceIn(2, `"hidden_size": 64`, `"hidden_size": -64`), "section config: not a valid config.json"},
		{"ir parse", replaceIn(3, "graph prefill", "graph prefill prefill"), "section ir: does not parse"},
		{"ir meta", func(b [][]byte) [][]byte {
			mm, _ := base.Module()
			mm.Meta["cadence"] = passes.PerOffload
			b[3] = []byte(ir.Print(mm))
			b[0] = bytes.Replace(b[0], []byte(base.IRDigest), []byte(ir.Digest(mm)), 1)
			return b
		}, `section ir: meta cadence is "per-offload", the meta section says "per-forward"`},
		{"ir digest", func(b [][]byte) [][]byte {
			mm, _ := base.Module()
			mm.Meta["extra"] = "1"
			b[3] = []byte(ir.Print(mm))
			return b
		}, "section ir: digest mismatch: meta says"},
		{"ir phases", func(b [][]byte) [][]byte {
			mm, _ := base.Module()
			mm.Graphs = mm.Graphs[:1]
			b[3] = []byte(ir.Print(mm))
			b[0] = bytes.Replace(b[0], []byte(base.IRDigest), []byte(ir.Digest(mm)), 1)
			return b
		}, "section ir: has 1 phases, meta lists 2"},
	}
	for _, tc := range cases {
		_, err := Decode(reseal(base, tc.edit))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v\nwant %q", tc.name, err, tc.want)
		}
	}
}

func TestHeaderErrors(t *testing.T) {
	b := testPlan(t)
	set := func(off int, v []byte) []byte { c := bytes.Clone(b); copy(c[off:], v); return c }
	cases := []struct {
		data []byte
		want string
	}{
		{[]byte("gelo-ir v1\n"), `plan file: header: wrong magic "gelo-ir ", want "GELOPLAN"`},
		{set(8, []byte{0, 0, 0, 2}), "plan file: header: format version 2 is not supported (this build reads version 1)"},
		{set(12, []byte{0, 0, 0, 5}), "plan file: header: section count is 5"},
		{set(16, []byte("xeta")), `plan file: header: section table entry 0 names section "xeta", want "meta"`},
		{set(16+8, []byte{0xff}), "plan file: section meta: truncated: the header lists sections and a trailer of 18374686479671"},
	}
	for _, tc := range cases {
		_, err := Decode(tc.data)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v\nwant %q", err, tc.want)
		}
	}
}

func TestReadFileNamesTheFile(t *testing.T) {
	b := bytes.Clone(testPlan(t))
	infos, _, _ := Layout(b)
	b[infos[3].Offset+100] ^= 1
	path := filepath.Join(t.TempDir(), "x.gelo")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(path)
	want := "plan file " + path + ": section ir: digest mismatch: header says sha256:"
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), ", body hashes to sha256:") {
		t.Fatalf("got %v\nwant %q...", err, want)
	}
}

// FuzzDecode: Decode never panics; what it accepts re-encodes to the same bytes and decodes
// to an equal plan. Under plain `go test` only the seed corpus runs (a few milliseconds).
func FuzzDecode(f *testing.F) {
	b := testPlan(f)
	f.Add(b)
	f.Add(b[:len(b)/2])
	f.Add(b[:headerLen])
	f.Add([]byte(Magic))
	f.Add([]byte{})
	mini := reseal(newTestPlan(f, passes.ProtectOptions{Mask: passes.MaskNone, Cadence: passes.PerForward}),
		func(b [][]byte) [][]byte { return b })
	f.Add(mini)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Decode(data)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not a *planfile.Error: %v", err, err)
			}
			return
		}
		again := Encode(p)
		if !bytes.Equal(again, data) {
			t.Fatalf("Encode(Decode(b)) != b")
		}
		q, err := Decode(again)
		if err != nil {
			t.Fatalf("Decode(Encode(p)): %v", err)
		}
		if d := cmp.Diff(p, q, planCmp...); d != "" {
			t.Fatalf("round trip differs:\n%s", d)
		}
		if q.Digest() != sha256.Sum256(data[:len(data)-32]) {
			t.Fatal("Digest() is not the hash before the trailer")
		}
	})
}

// FuzzDecodeSections fuzzes the section bodies behind valid framing (every digest and the
// trailer recomputed), so that mutations reach the content checks rather than stopping at
// a digest mismatch.
func FuzzDecodeSections(f *testing.F) {
	p := newTestPlan(f, passes.DefaultProtect())
	b := Encode(p)
	infos, _, _ := Layout(b)
	body := func(i int) []byte { return b[infos[i].Offset : infos[i].Offset+infos[i].Length] }
	f.Add(body(0), body(1), body(2), body(3))
	f.Add([]byte("{}"), []byte("{}"), []byte("{}"), []byte("gelo-ir v1\n"))
	f.Fuzz(func(t *testing.T, meta, identity, config, irText []byte) {
		data := assemble([][]byte{meta, identity, config, irText})
		q, err := Decode(data)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not a *planfile.Error: %v", err, err)
			}
			if pe.Section == "header" || pe.Section == "trailer" || strings.HasPrefix(pe.Msg, "digest mismatch: header says") {
				t.Fatalf("framing was valid but Decode says: %v", err)
			}
			return
		}
		if !bytes.Equal(Encode(q), data) {
			t.Fatal("Encode(Decode(b)) != b")
		}
	})
}

// A plan's probe settings must be what its IR says: a plan with probes
// round-trips; one whose passes section claims more or fewer probes than
// its module has, or claims probes without the pass, is refused naming
// the field.
func TestVerifyFieldsChecked(t *testing.T) {
	po := passes.DefaultProtect()
	po.Verify = 3
	p := newTestPlan(t, po)
	roundTrip(t, p)
	for _, tc := range []struct {
		name, want string
		edit       func(p *Plan)
	}{
		{"more probes claimed", "meta verify", func(p *Plan) { p.Passes.Verify = 4 }},
		{"no pool", "passes.verify_pool 0", func(p *Plan) { p.Passes.VerifyPool = 0 }},
		{"probes without the pass", "no verify-probes pass", func(p *Plan) {
			q := newTestPlan(t, passes.DefaultProtect())
			q.Passes.Verify, q.Passes.VerifyPool = 2, 8
			*p = *q
		}},
	} {
		c := newTestPlan(t, po)
		tc.edit(c)
		_, err := Decode(Encode(c))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
}
