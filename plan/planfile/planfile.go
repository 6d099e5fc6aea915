package planfile

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"gelo/ir"
	"gelo/models"
	"gelo/passes"
)

// File format constants.
const (
	Magic         = "GELOPLAN"
	FormatVersion = 1
	// Ext is the file name extension of plan files.
	Ext = ".gelo"
)

// Section names of format version 1, in file order.
const (
	SectionMeta     = "meta"
	SectionIdentity = "identity"
	SectionConfig   = "config"
	SectionIR       = "ir"
)

// Names of the parts of a file outside the sections, as errors name them.
const (
	partHeader  = "header"
	partTrailer = "trailer"
)

var sectionNames = []string{SectionMeta, SectionIdentity, SectionConfig, SectionIR}

const (
	nameLen    = 8
	entryLen   = nameLen + 8 + sha256.Size
	fixedLen   = len(Magic) + 4 + 4
	headerLen  = fixedLen + 4*entryLen // version 1: four sections
	trailerLen = sha256.Size
)

// Model source kinds.
const (
	SourceVariant = "variant"
	SourceDir     = "dir"
	SourceGGUF    = "gguf"
	// SourceBuiltin is a checkpoint built into the binary, by name
	// (models.BuiltinNames).
	SourceBuiltin = "builtin"
)

// Source says where a plan's weights come from. It is a hint for the runtime, not part of
// the identity: whatever is loaded must hash to the sealed identity.
type Source struct {
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Seed       uint64 `json:"seed"`
	SynthDType string `json:"synth_dtype"`
	Tokenizer  string `json:"tokenizer"`
}

// Passes is the pass configuration a plan was compiled with.
type Passes struct {
	Pipeline []string
	// Security is the protection level (passes.Levels, or custom).
	Security     string
	Mask         string
	Cadence      string
	Topology     string
	ShieldK      int
	ShieldEnergy float64
	Center       bool
	Fusions      []string
	WeightFormat string
	// Verify is the integrity probes per device matmul (0: none) and
	// VerifyPool the secret vectors per weight they are drawn from.
	Verify, VerifyPool int
	// KVDType is the KV cache's element type, f16 or bf16; empty for f32
	// (left out, so f32 plans read as before).
	KVDType string
}

// Phase is one compiled graph: its name and ir.GraphDigest.
type Phase struct {
	Name   string `json:"name"`
	Digest string `json:"digest"`
}

// Plan is the content of a plan file.
type Plan struct {
	Backend string
	Source  Source
	Passes  Passes
	// IdentityDigest is the model identity digest, 64 lower-case hex digits; it must equal
	// the "digest" member of Identity.
	IdentityDigest string
	// Identity is the model identity as canonical JSON (attest.Identity).
	Identity []byte
	// Config is the config.json bytes.
	Config []byte
	// IR is the lowered program: ir.Print of the compiled module.
	IR string
	// IRDigest is ir.Digest of the module; Phases the digest of each graph.
	IRDigest string
	Phases   []Phase
}

// SetModule stores m as the plan's program: its printed text, its digest and the digest of
// each phase.
func (p *Plan) SetModule(m *ir.Module) {
	p.IR = ir.Print(m)
	p.IRDigest = ir.Digest(m)
	p.Phases = nil
	for _, g := range m.Graphs {
		p.Phases = append(p.Phases, Phase{Name: g.Name, Digest: ir.GraphDigest(g)})
	}
}

// Module parses the plan's program (a fresh copy on every call).
func (p *Plan) Module() (*ir.Module, error) {
	m, err := ir.Parse(p.IR)
	if err != nil {
		return nil, &Error{Section: SectionIR, Msg: "does not parse: " + err.Error(), Err: err}
	}
	return m, nil
}

// Digest returns the plan digest: the SHA-256 of the encoded file up to its trailer (which
// is the trailer itself).
func (p *Plan) Digest() [32]byte {
	b := Encode(p)
	var d [32]byte
	copy(d[:], b[len(b)-trailerLen:])
	return d
}

// Error is a refusal to read a plan file. It names the file (when known), the section or
// part ("header", "trailer") and says what did not match.
type Error struct {
	File    string
	Section string
	Msg     string
	Err     error // the underlying error, if any
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("plan file")
	if e.File != "" {
		b.WriteString(" ")
		b.WriteString(e.File)
	}
	if e.Section != "" {
		if e.Section == partHeader || e.Section == partTrailer {
			b.WriteString(": " + e.Section)
		} else {
			b.WriteString(": section " + e.Section)
		}
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

func errorf(section, format string, args ...any) *Error {
	return &Error{Section: section, Msg: fmt.Sprintf(format, args...)}
}

// IsPlan reports whether data begins with the plan file magic.
func IsPlan(data []byte) bool { return bytes.HasPrefix(data, []byte(Magic)) }

// wire forms of the meta section. Field order is the file's order.
type metaWire struct {
	Backend        string     `json:"backend"`
	Source         Source     `json:"source"`
	Passes         passesWire `json:"passes"`
	IdentityDigest string     `json:"identity_digest"`
	IRDigest       string     `json:"ir_digest"`
	Phases         []Phase    `json:"phases"`
}

type passesWire struct {
	Pipeline     []string `json:"pipeline"`
	Security     string   `json:"security"`
	Mask         string   `json:"mask"`
	Cadence      string   `json:"cadence"`
	Topology     string   `json:"topology"`
	ShieldK      int      `json:"shield_k"`
	ShieldEnergy string   `json:"shield_energy"`
	Center       bool     `json:"center"`
	Fusions      []string `json:"fusions"`
	WeightFormat string   `json:"weight_format"`
	Verify       int      `json:"verify,omitempty"`
	VerifyPool   int      `json:"verify_pool,omitempty"`
	KVDType      string   `json:"kv_dtype,omitempty"`
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func formatEnergy(e float64) string { return strconv.FormatFloat(e, 'g', -1, 64) }

func encodeMeta(p *Plan) []byte {
	phases := p.Phases
	if phases == nil {
		phases = []Phase{}
	}
	w := metaWire{
		Backend: p.Backend,
		Source:  p.Source,
		Passes: passesWire{
			Pipeline:     nonNil(p.Passes.Pipeline),
			Security:     p.Passes.Security,
			Mask:         p.Passes.Mask,
			Cadence:      p.Passes.Cadence,
			Topology:     p.Passes.Topology,
			ShieldK:      p.Passes.ShieldK,
			ShieldEnergy: formatEnergy(p.Passes.ShieldEnergy),
			Center:       p.Passes.Center,
			Fusions:      nonNil(p.Passes.Fusions),
			WeightFormat: p.Passes.WeightFormat,
			Verify:       p.Passes.Verify,
			VerifyPool:   p.Passes.VerifyPool,
			KVDType:      p.Passes.KVDType,
		},
		IdentityDigest: p.IdentityDigest,
		IRDigest:       p.IRDigest,
		Phases:         phases,
	}
	b, err := json.Marshal(&w)
	if err != nil {
		// Only strings, integers, booleans and slices of them: Marshal cannot fail.
		panic("planfile: encoding meta: " + err.Error())
	}
	return b
}

// Encode writes p in format version 1. It does not check p; Decode refuses a plan whose
// content is inconsistent.
func Encode(p *Plan) []byte {
	bodies := [][]byte{encodeMeta(p), p.Identity, p.Config, []byte(p.IR)}
	size := headerLen + trailerLen
	for _, b := range bodies {
		size += len(b)
	}
	out := make([]byte, 0, size)
	out = append(out, Magic...)
	out = binary.BigEndian.AppendUint32(out, FormatVersion)
	out = binary.BigEndian.AppendUint32(out, uint32(len(bodies)))
	for i, b := range bodies {
		var name [nameLen]byte
		copy(name[:], sectionNames[i])
		out = append(out, name[:]...)
		out = binary.BigEndian.AppendUint64(out, uint64(len(b)))
		sum := sha256.Sum256(b)
		out = append(out, sum[:]...)
	}
	for _, b := range bodies {
		out = append(out, b...)
	}
	sum := sha256.Sum256(out)
	return append(out, sum[:]...)
}

// SectionInfo locates one section in an encoded file.
type SectionInfo struct {
	Name   string
	Offset int // of the body
	Length int
	// Entry is the offset of the section's table entry.
	Entry int
}

// Layout parses the header and section table of data and returns where each section lies,
// plus the offset of the trailer. It checks the structure (magic, version, names, lengths)
// but no digest.
func Layout(data []byte) ([]SectionInfo, int, error) {
	if len(data) < len(Magic) {
		return nil, 0, errorf(partHeader, "truncated: the file is %d bytes, shorter than the %d-byte magic", len(data), len(Magic))
	}
	if !IsPlan(data) {
		return nil, 0, errorf(partHeader, "wrong magic \"%s\", want %q (not a gelo plan file)", printable(data[:len(Magic)]), Magic)
	}
	if len(data) < fixedLen {
		return nil, 0, errorf(partHeader, "truncated: the file is %d bytes, the fixed header alone is %d", len(data), fixedLen)
	}
	if v := binary.BigEndian.Uint32(data[8:]); v != FormatVersion {
		return nil, 0, errorf(partHeader, "format version %d is not supported (this build reads version %d)", v, FormatVersion)
	}
	if n := binary.BigEndian.Uint32(data[12:]); n != uint32(len(sectionNames)) {
		return nil, 0, errorf(partHeader, "section count is %d; format version %d has exactly %d sections (%s)",
			n, FormatVersion, len(sectionNames), strings.Join(sectionNames, ", "))
	}
	if len(data) < headerLen+trailerLen {
		return nil, 0, errorf(partHeader, "truncated: the file is %d bytes, the header, section table and trailer alone are %d",
			len(data), headerLen+trailerLen)
	}
	lengths := make([]uint64, len(sectionNames))
	for i, want := range sectionNames {
		e := fixedLen + i*entryLen
		raw := data[e : e+nameLen]
		var padded [nameLen]byte
		copy(padded[:], want)
		if !bytes.Equal(raw, padded[:]) {
			return nil, 0, errorf(partHeader, "section table entry %d names section \"%s\", want %q", i, printable(bytes.TrimRight(raw, "\x00")), want)
		}
		lengths[i] = binary.BigEndian.Uint64(data[e+nameLen:])
	}
	// Where each section ends, without wrapping around; the file must hold them all.
	end := uint64(headerLen)
	for i, n := range lengths {
		end = satAdd(end, n)
		if end > uint64(len(data)) {
			need := end
			for _, m := range lengths[i+1:] {
				need = satAdd(need, m)
			}
			return nil, 0, errorf(sectionNames[i], "truncated: the header lists sections and a trailer of %d bytes in all, the file has %d",
				satAdd(need, trailerLen), len(data))
		}
	}
	if need := satAdd(end, trailerLen); need > uint64(len(data)) {
		return nil, 0, errorf(partTrailer, "truncated: the header lists sections and a trailer of %d bytes in all, the file has %d", need, len(data))
	}
	infos := make([]SectionInfo, len(sectionNames))
	off := headerLen
	for i, n := range lengths {
		infos[i] = SectionInfo{Name: sectionNames[i], Offset: off, Length: int(n), Entry: fixedLen + i*entryLen}
		off += int(n)
	}
	trailer := len(data) - trailerLen
	if off != trailer {
		return nil, 0, errorf(partTrailer, "%d unexpected bytes after section %s (trailing data, or a section length is wrong)",
			trailer-off, sectionNames[len(sectionNames)-1])
	}
	return infos, trailer, nil
}

// Decode reads a plan file and checks it (see the package documentation for what is
// checked). Errors are *Error values naming the section and field.
func Decode(data []byte) (*Plan, error) {
	p, err := decode(data)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// ReadFile reads and decodes a plan file; errors name the file.
func ReadFile(path string) (*Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{File: path, Msg: err.Error(), Err: err}
	}
	p, err := Decode(data)
	if err != nil {
		var pe *Error
		if errors.As(err, &pe) {
			pe.File = path
		}
		return nil, err
	}
	return p, nil
}

func decode(data []byte) (*Plan, error) {
	infos, trailer, err := Layout(data)
	if err != nil {
		return nil, err
	}
	bodies := make([][]byte, len(infos))
	for i, s := range infos {
		body := data[s.Offset : s.Offset+s.Length]
		want := data[s.Entry+nameLen+8 : s.Entry+entryLen]
		if got := sha256.Sum256(body); !bytes.Equal(got[:], want) {
			return nil, errorf(s.Name, "digest mismatch: header says sha256:%x, body hashes to sha256:%x", want, got)
		}
		bodies[i] = body
	}
	if got := sha256.Sum256(data[:trailer]); !bytes.Equal(got[:], data[trailer:]) {
		return nil, errorf(partTrailer, "plan digest mismatch: trailer says %x, the file before it hashes to %x", data[trailer:], got)
	}
	p, err := decodeMeta(bodies[0])
	if err != nil {
		return nil, err
	}
	p.Identity = bytes.Clone(bodies[1])
	p.Config = bytes.Clone(bodies[2])
	p.IR = string(bodies[3])
	if err := p.check(); err != nil {
		return nil, err
	}
	return p, nil
}

func decodeMeta(body []byte) (*Plan, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var w metaWire
	if err := dec.Decode(&w); err != nil {
		return nil, errorf(SectionMeta, "not valid meta JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errorf(SectionMeta, "trailing data after the JSON object")
	}
	e, err := strconv.ParseFloat(w.Passes.ShieldEnergy, 64)
	if err != nil {
		return nil, errorf(SectionMeta, "passes.shield_energy %q is not a number", w.Passes.ShieldEnergy)
	}
	p := &Plan{
		Backend: w.Backend,
		Source:  w.Source,
		Passes: Passes{
			Pipeline: w.Passes.Pipeline, Security: w.Passes.Security, Mask: w.Passes.Mask, Cadence: w.Passes.Cadence,
			Topology: w.Passes.Topology, ShieldK: w.Passes.ShieldK, ShieldEnergy: e,
			Center: w.Passes.Center, Fusions: w.Passes.Fusions, WeightFormat: w.Passes.WeightFormat,
			Verify: w.Passes.Verify, VerifyPool: w.Passes.VerifyPool, KVDType: w.Passes.KVDType,
		},
		IdentityDigest: w.IdentityDigest,
		IRDigest:       w.IRDigest,
		Phases:         w.Phases,
	}
	if !bytes.Equal(encodeMeta(p), body) {
		return nil, errorf(SectionMeta, "not in canonical form (fields in the documented order, compact, no escapes that are not needed)")
	}
	return p, nil
}

// check validates the content of a decoded plan.
func (p *Plan) check() error {
	if err := p.checkMeta(); err != nil {
		return err
	}
	if err := p.checkIdentity(); err != nil {
		return err
	}
	if _, err := models.ParseConfig("section", p.Config); err != nil {
		return &Error{Section: SectionConfig, Msg: "not a valid config.json: " + err.Error(), Err: err}
	}
	return p.checkIR()
}

func isIdent(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

func isIRDigest(s string) bool {
	h, ok := strings.CutPrefix(s, "sha256:")
	return ok && isHex64(h)
}

func (p *Plan) checkMeta() error {
	bad := func(format string, args ...any) error { return errorf(SectionMeta, format, args...) }
	if !isIdent(p.Backend) {
		return bad("backend %q is not a backend name", p.Backend)
	}
	s := p.Source
	switch s.Kind {
	case SourceVariant:
		if !isIdent(s.Name) {
			return bad("source.name %q is not a variant name", s.Name)
		}
		if !isIdent(s.SynthDType) {
			return bad("source.synth_dtype %q: a variant source needs the dtype its weights are rounded through", s.SynthDType)
		}
	case SourceBuiltin:
		if !isIdent(s.Name) {
			return bad("source.name %q is not a built-in model name", s.Name)
		}
		if s.Seed != 0 || s.SynthDType != "" {
			return bad("source: a built-in model has no seed or synth_dtype (got seed %d, synth_dtype %q)", s.Seed, s.SynthDType)
		}
	case SourceDir, SourceGGUF:
		if s.Name == "" {
			return bad("source.name is empty: a %s source needs its path", s.Kind)
		}
		if s.Seed != 0 || s.SynthDType != "" {
			return bad("source: a directory source has no seed or synth_dtype (got seed %d, synth_dtype %q)", s.Seed, s.SynthDType)
		}
	default:
		return bad("source.kind %q: want %q, %q, %q or %q", s.Kind, SourceVariant, SourceDir, SourceGGUF, SourceBuiltin)
	}
	ps := p.Passes
	if len(ps.Pipeline) == 0 {
		return bad("passes.pipeline is empty")
	}
	for i, n := range ps.Pipeline {
		if !isIdent(n) {
			return bad("passes.pipeline[%d] %q is not a pass name", i, n)
		}
	}
	o := passes.ProtectOptions{Security: ps.Security, Mask: ps.Mask, Cadence: ps.Cadence, ShieldK: ps.ShieldK,
		ShieldEnergy: ps.ShieldEnergy, Center: ps.Center, Topology: ps.Topology, Verify: ps.Verify, VerifyPool: ps.VerifyPool,
		Weights: ps.WeightFormat}
	if err := o.Check(); err != nil {
		return bad("passes: %v", err)
	}
	if math.IsNaN(ps.ShieldEnergy) || math.IsInf(ps.ShieldEnergy, 0) {
		return bad("passes.shield_energy %v is not finite", ps.ShieldEnergy)
	}
	seen := map[string]bool{}
	for i, f := range ps.Fusions {
		if !isIdent(f) || seen[f] {
			return bad("passes.fusions[%d] %q is empty, not a name, or repeated", i, f)
		}
		seen[f] = true
	}
	if !isIdent(ps.WeightFormat) {
		return bad("passes.weight_format %q is not a format name", ps.WeightFormat)
	}
	if ps.KVDType != "" && ps.KVDType != "f16" && ps.KVDType != "bf16" {
		return bad("passes.kv_dtype %q: want f16 or bf16 (an f32 cache leaves it out)", ps.KVDType)
	}
	if !isHex64(p.IdentityDigest) {
		return bad("identity_digest %q is not 64 lower-case hex digits", p.IdentityDigest)
	}
	if !isIRDigest(p.IRDigest) {
		return bad("ir_digest %q is not sha256: and 64 lower-case hex digits", p.IRDigest)
	}
	if len(p.Phases) == 0 {
		return bad("phases is empty")
	}
	names := map[string]bool{}
	for i, ph := range p.Phases {
		if ph.Name == "" || names[ph.Name] {
			return bad("phases[%d] has an empty or repeated name %q", i, ph.Name)
		}
		names[ph.Name] = true
		if !isIRDigest(ph.Digest) {
			return bad("phases[%d] (%s): digest %q is not sha256: and 64 lower-case hex digits", i, ph.Name, ph.Digest)
		}
	}
	return nil
}

func (p *Plan) checkIdentity() error {
	if !json.Valid(p.Identity) {
		return errorf(SectionIdentity, "not valid JSON")
	}
	var id struct {
		Digest *string `json:"digest"`
	}
	if err := json.Unmarshal(p.Identity, &id); err != nil {
		return errorf(SectionIdentity, "not a JSON object with a digest: %v", err)
	}
	if id.Digest == nil {
		return errorf(SectionIdentity, "has no \"digest\" member")
	}
	if *id.Digest != p.IdentityDigest {
		return errorf(SectionIdentity, "digest mismatch: meta says identity %s, the identity section says %s", p.IdentityDigest, *id.Digest)
	}
	return nil
}

func (p *Plan) checkIR() error {
	m, err := p.Module()
	if err != nil {
		return err
	}
	bad := func(format string, args ...any) error { return errorf(SectionIR, format, args...) }
	if ir.Print(m) != p.IR {
		return bad("not in canonical printed form (ir.Print of what it parses to differs)")
	}
	if got := ir.Digest(m); got != p.IRDigest {
		return bad("digest mismatch: meta says %s, the IR hashes to %s", p.IRDigest, got)
	}
	if len(m.Graphs) != len(p.Phases) {
		return bad("has %d phases, meta lists %d", len(m.Graphs), len(p.Phases))
	}
	for i, g := range m.Graphs {
		ph := p.Phases[i]
		if g.Name != ph.Name {
			return bad("phase %d is %q, meta says %q", i, g.Name, ph.Name)
		}
		if got := ir.GraphDigest(g); got != ph.Digest {
			return bad("phase %s: digest mismatch: meta says %s, the IR hashes to %s", g.Name, ph.Digest, got)
		}
	}
	// The IR records the configuration it was compiled with; it must agree with meta.
	ps := p.Passes
	want := map[string]string{
		"model":   p.Source.Name,
		"passes":  strings.Join(ps.Pipeline, ","),
		"mask":    ps.Mask,
		"cadence": ps.Cadence,
	}
	if p.Source.Kind == SourceVariant {
		want["seed"] = strconv.FormatUint(p.Source.Seed, 10)
	}
	if slices.Contains(ps.Pipeline, "quantize") {
		want["weights"] = ps.WeightFormat
	}
	if slices.Contains(ps.Pipeline, "fuse") {
		want["fusions"] = strings.Join(ps.Fusions, ",")
		if len(ps.Fusions) == 0 {
			want["fusions"] = "none"
		}
	} else if len(ps.Fusions) > 0 {
		return bad("the pipeline has no fuse pass, yet the meta section lists fusions %v", ps.Fusions)
	}
	if slices.Contains(ps.Pipeline, "protect") {
		want["security"] = ps.Security
	}
	if slices.Contains(ps.Pipeline, "verify-probes") {
		if ps.Verify <= 0 || ps.VerifyPool <= 0 {
			return bad("the pipeline checks device results, yet passes.verify is %d and passes.verify_pool %d", ps.Verify, ps.VerifyPool)
		}
		want["verify"] = strconv.Itoa(ps.Verify)
		want["verify_pool"] = strconv.Itoa(ps.VerifyPool)
	} else if ps.Verify != 0 || ps.VerifyPool != 0 {
		return bad("the pipeline has no verify-probes pass, yet passes.verify is %d", ps.Verify)
	}
	if ps.KVDType != "" {
		want["kv_dtype"] = ps.KVDType
	} else if k := m.Meta["kv_dtype"]; k != "" {
		return bad("the IR's KV cache is %s, yet the meta section lists none (f32)", k)
	}
	switch l, _ := passes.LookupLevel(ps.Security); {
	case l.Lattice():
		// lwe ciphertexts: no shield, centring or topology, the lattice
		// parameters instead.
		want["lwe"] = passes.LWEMeta(*l.LWE)
	case ps.Mask != passes.MaskNone:
		want["shield"] = strconv.Itoa(ps.ShieldK) + "," + formatEnergy(ps.ShieldEnergy)
		want["center"] = strconv.FormatBool(ps.Center)
		want["topology"] = ps.Topology
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		got, ok := m.Meta[k]
		if !ok {
			return bad("meta %s is missing; the meta section says %q", k, want[k])
		}
		if got != want[k] {
			return bad("meta %s is %q, the meta section says %q", k, got, want[k])
		}
	}
	return nil
}

// satAdd adds without wrapping around.
func satAdd(a, b uint64) uint64 {
	if a+b < a {
		return math.MaxUint64
	}
	return a + b
}

// printable renders raw header bytes for a message.
func printable(b []byte) string {
	var s strings.Builder
	for _, c := range b {
		if c >= 0x20 && c < 0x7f {
			s.WriteByte(c)
		} else {
			fmt.Fprintf(&s, "\\x%02x", c)
		}
	}
	return s.String()
}
