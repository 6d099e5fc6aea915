package attest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/iotest"
)

// testModel is a small model in the Hugging Face layout: a few F32/BF16 tensors with
// deterministic contents.
type testModel struct {
	config    []byte
	names     []string
	dtypes    []string
	shapes    [][]int
	data      [][]byte
	tokenizer []byte
	flags     map[string]string
}

func newTestModel() *testModel {
	m := &testModel{
		config:    []byte(`{"architectures":["Qwen3ForCausalLM"],"hidden_size":8,"num_hidden_layers":4}`),
		tokenizer: []byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":1,"<eos>":2}}}`),
		flags:     map[string]string{"qk_norm": "true", "weights": "f32"},
	}
	add := func(name, dtype string, shape []int) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		size := map[string]int{"F32": 4, "BF16": 2}[dtype]
		b := make([]byte, n*size)
		seed := uint32(len(m.names)*7919 + 17)
		for i := range b {
			seed = seed*1664525 + 1013904223
			b[i] = byte(seed >> 24)
		}
		m.names = append(m.names, name)
		m.dtypes = append(m.dtypes, dtype)
		m.shapes = append(m.shapes, shape)
		m.data = append(m.data, b)
	}
	add("model.embed_tokens.weight", "BF16", []int{16, 8})
	for l := 0; l < 4; l++ {
		p := "model.layers." + string(rune('0'+l)) + "."
		add(p+"self_attn.q_proj.weight", "F32", []int{8, 8})
		add(p+"mlp.up_proj.weight", "F32", []int{12, 8})
		add(p+"input_layernorm.weight", "F32", []int{8})
	}
	add("model.norm.weight", "F32", []int{8})
	return m
}

func (m *testModel) input() IdentityInput {
	in := IdentityInput{Config: m.config, Tokenizer: m.tokenizer, Flags: m.flags}
	for i := range m.names {
		in.Tensors = append(in.Tensors, TensorInput{Name: m.names[i], DType: m.dtypes[i], Shape: m.shapes[i], Data: m.data[i]})
	}
	return in
}

func (m *testModel) clone() *testModel {
	c := *m
	c.config = bytes.Clone(m.config)
	c.tokenizer = bytes.Clone(m.tokenizer)
	c.flags = map[string]string{}
	for k, v := range m.flags {
		c.flags[k] = v
	}
	c.data = make([][]byte, len(m.data))
	for i := range m.data {
		c.data[i] = bytes.Clone(m.data[i])
	}
	c.names = append([]string(nil), m.names...)
	c.dtypes = append([]string(nil), m.dtypes...)
	c.shapes = append([][]int(nil), m.shapes...)
	return &c
}

func mustIdentity(t *testing.T, in IdentityInput) Identity {
	t.Helper()
	id, err := ComputeIdentity(in)
	if err != nil {
		t.Fatalf("ComputeIdentity: %v", err)
	}
	return id
}

func TestIdentityDeterministic(t *testing.T) {
	m := newTestModel()
	a := mustIdentity(t, m.input())
	if err := a.Validate(); err != nil {
		t.Fatal(err)
	}
	// Same input, sequential hashing.
	in := m.input()
	in.Workers = 1
	if b := mustIdentity(t, in); b.Digest != a.Digest {
		t.Fatalf("Workers=1 gives %s, default gives %s", b, a)
	}
	// Same bytes given as readers (one byte at a time) instead of slices.
	in = m.input()
	for i := range in.Tensors {
		in.Tensors[i].Reader = iotest.OneByteReader(bytes.NewReader(in.Tensors[i].Data))
		in.Tensors[i].Data = nil
	}
	if b := mustIdentity(t, in); b.Digest != a.Digest {
		t.Fatalf("readers give %s, slices give %s", b, a)
	}
	// Flag map order does not matter (maps have none, but build it the other way round).
	in = m.input()
	in.Flags = map[string]string{"weights": "f32", "qk_norm": "true"}
	if b := mustIdentity(t, in); b.Digest != a.Digest {
		t.Fatal("flag map built in another order changes the identity")
	}
	if got := a.String(); len(got) != 64 || got != a.Digest.String() {
		t.Fatalf("String() = %q", got)
	}
}

// TestIdentityKnownAnswer pins the framing: if this digest changes, every sealed plan breaks,
// so the tag version must be bumped along with it. The expected value was computed by a
// separate implementation of the framing written from the package documentation.
func TestIdentityKnownAnswer(t *testing.T) {
	id := mustIdentity(t, IdentityInput{
		Config:    []byte(`{"hidden_size":2}`),
		Tensors:   []TensorInput{{Name: "w", DType: "F32", Shape: []int{2}, Data: []byte{0, 0, 128, 63, 0, 0, 0, 64}}},
		Tokenizer: []byte("tok"),
		Flags:     map[string]string{"qk_norm": "true"},
	})
	const want = "48bf00c0dd1d6ac0466aa6f12c0b8d38eb2ffd761bffdbddcc04120af61bbbd8"
	if id.String() != want {
		t.Fatalf("identity digest = %s, want %s (did the framing change?)", id, want)
	}
}

func TestIdentityWeightByteFlip(t *testing.T) {
	m := newTestModel()
	want := mustIdentity(t, m.input())
	const target = "model.layers.3.mlp.up_proj.weight"
	c := m.clone()
	for i, n := range c.names {
		if n == target {
			c.data[i][5] ^= 1
		}
	}
	got := mustIdentity(t, c.input())
	err := want.Compare(got)
	if err == nil {
		t.Fatal("flipped weight byte not detected")
	}
	msg := err.Error()
	if !strings.Contains(msg, "weights differ: tensor "+target+": data differs") {
		t.Fatalf("message does not name the tensor: %s", msg)
	}
	if strings.Contains(msg, "config") || strings.Contains(msg, "tokenizer") || strings.Contains(msg, "flag") {
		t.Fatalf("message names parts that did not change: %s", msg)
	}
	var me *MismatchError
	if !errors.As(err, &me) || len(me.Diffs) != 1 {
		t.Fatalf("want one MismatchError diff, got %v", err)
	}
}

func TestIdentitySensitivity(t *testing.T) {
	m := newTestModel()
	base := mustIdentity(t, m.input())
	cases := []struct {
		name   string
		change func(c *testModel, in *IdentityInput)
		want   string
	}{
		{"config", func(c *testModel, in *IdentityInput) {
			in.Config = []byte(strings.Replace(string(c.config), "8", "9", 1))
		}, "config.json differs"},
		{"tokenizer bytes", func(c *testModel, in *IdentityInput) {
			in.Tokenizer = []byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":1,"<eos>":3}}}`)
		}, "tokenizer differs"},
		{"tokenizer absent", func(c *testModel, in *IdentityInput) { in.Tokenizer = nil }, "tokenizer: want one, got none"},
		{"flag value", func(c *testModel, in *IdentityInput) {
			in.Flags = map[string]string{"qk_norm": "false", "weights": "f32"}
		}, `numerics flag "qk_norm": want "true", got "false"`},
		{"flag added", func(c *testModel, in *IdentityInput) {
			in.Flags = map[string]string{"qk_norm": "true", "weights": "f32", "rope": "yarn"}
		}, `numerics flag "rope": want unset, got "yarn"`},
		{"flag removed", func(c *testModel, in *IdentityInput) { in.Flags = map[string]string{"qk_norm": "true"} }, `numerics flag "weights": want "f32", got unset`},
		{"dtype", func(c *testModel, in *IdentityInput) {
			in.Tensors[1].DType = "I32"
		}, "tensor model.layers.0.self_attn.q_proj.weight: dtype want F32, got I32"},
		{"shape", func(c *testModel, in *IdentityInput) { in.Tensors[2].Shape = []int{8, 12} }, "tensor model.layers.0.mlp.up_proj.weight: shape want [12 8], got [8 12]"},
		{"missing tensor", func(c *testModel, in *IdentityInput) { in.Tensors = in.Tensors[:len(in.Tensors)-1] }, "1 tensor(s) missing: model.norm.weight"},
		{"extra tensor", func(c *testModel, in *IdentityInput) {
			in.Tensors = append(in.Tensors, TensorInput{Name: "lm_head.weight", DType: "F32", Shape: []int{1}, Data: make([]byte, 4)})
		}, "1 unexpected tensor(s): lm_head.weight"},
		{"order", func(c *testModel, in *IdentityInput) { in.Tensors[1], in.Tensors[2] = in.Tensors[2], in.Tensors[1] }, "tensor order differs at position 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := m.clone()
			in := c.input()
			tc.change(c, &in)
			got := mustIdentity(t, in)
			err := base.Compare(got)
			if err == nil {
				t.Fatal("change not detected")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("message %q does not contain %q", err, tc.want)
			}
		})
	}
	// An empty tokenizer file is not the same as none.
	in := m.input()
	in.Tokenizer = nil
	none := mustIdentity(t, in)
	in.Tokenizer = []byte{}
	empty := mustIdentity(t, in)
	if none.Digest == empty.Digest {
		t.Fatal("empty tokenizer and absent tokenizer give the same identity")
	}
	// Framing: moving bytes between adjacent fields changes the digest.
	in = m.input()
	in.Flags = map[string]string{"ab": "c"}
	x := mustIdentity(t, in)
	in.Flags = map[string]string{"a": "bc"}
	if y := mustIdentity(t, in); x.Digest == y.Digest {
		t.Fatal("flags {ab:c} and {a:bc} collide")
	}
}

func TestIdentityManyTensorsListed(t *testing.T) {
	m := newTestModel()
	want := mustIdentity(t, m.input())
	c := m.clone()
	for i := range c.data {
		c.data[i][0] ^= 0xff
	}
	err := want.Compare(mustIdentity(t, c.input()))
	if err == nil || !strings.Contains(err.Error(), "more tensor(s) differ") {
		t.Fatalf("want a capped list, got %v", err)
	}
}

func TestIdentityBadInput(t *testing.T) {
	m := newTestModel()
	cases := []struct {
		name   string
		change func(in *IdentityInput)
		want   string
	}{
		{"empty config", func(in *IdentityInput) { in.Config = nil }, "config.json is empty"},
		{"unnamed tensor", func(in *IdentityInput) { in.Tensors[3].Name = "" }, "tensor 3 has no name"},
		{"duplicate tensor", func(in *IdentityInput) { in.Tensors[3].Name = in.Tensors[1].Name }, `tensor "model.layers.0.self_attn.q_proj.weight" appears twice`},
		{"negative dim", func(in *IdentityInput) { in.Tensors[1].Shape = []int{8, -8} }, "shape dimension 1 is negative"},
		{"huge shape", func(in *IdentityInput) { in.Tensors[1].Shape = []int{1 << 40, 1 << 40} }, "too many elements"},
		{"truncated data", func(in *IdentityInput) { in.Tensors[1].Data = in.Tensors[1].Data[:10] }, `tensor "model.layers.0.self_attn.q_proj.weight": dtype F32 with shape [8 8] needs 256 bytes, got 10`},
		{"truncated reader", func(in *IdentityInput) {
			in.Tensors[2].Reader = bytes.NewReader(in.Tensors[2].Data[:7])
		}, `tensor "model.layers.0.mlp.up_proj.weight": dtype F32 with shape [12 8] needs 384 bytes, got 7`},
		{"reader error", func(in *IdentityInput) {
			in.Tensors[2].Reader = iotest.ErrReader(errors.New("disk on fire"))
		}, `tensor "model.layers.0.mlp.up_proj.weight": reading its data: disk on fire`},
		{"empty flag key", func(in *IdentityInput) { in.Flags = map[string]string{"": "x"} }, "numerics flag has an empty name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := m.clone().input()
			tc.change(&in)
			_, err := ComputeIdentity(in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// Unknown dtypes are hashed without the length check.
	in := m.input()
	in.Tensors[1].DType = "Q4_K"
	in.Tensors[1].Data = []byte{1, 2, 3}
	if _, err := ComputeIdentity(in); err != nil {
		t.Fatalf("unknown dtype: %v", err)
	}
}

func TestIdentityJSONAndValidate(t *testing.T) {
	m := newTestModel()
	id := mustIdentity(t, m.input())
	b, err := json.Marshal(id)
	if err != nil {
		t.Fatal(err)
	}
	var back Identity
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if err := back.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := id.Compare(back); err != nil {
		t.Fatal(err)
	}

	// Tampering with a stored tensor digest is caught by Validate.
	bad := back
	bad.Tensors = append([]TensorDigest(nil), back.Tensors...)
	bad.Tensors[2].Data[0] ^= 1
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "tensor list hashes to weights") {
		t.Fatalf("Validate: %v", err)
	}
	// So is a stored flag.
	bad = back
	bad.Flags = map[string]string{"qk_norm": "false", "weights": "f32"}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "flags hash to") {
		t.Fatalf("Validate: %v", err)
	}
	// And the top digest.
	bad = back
	bad.Digest[0] ^= 1
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "inconsistent") {
		t.Fatalf("Validate: %v", err)
	}
	bad = back
	bad.HasTokenizer = false
	bad.Digest = bad.combine()
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "has_tokenizer") {
		t.Fatalf("Validate: %v", err)
	}

	// Without per-tensor detail, Compare still names the part.
	c := m.clone()
	c.data[0][0] ^= 1
	other := mustIdentity(t, c.input())
	other.Tensors = nil
	if err := id.Compare(other); err == nil || !strings.Contains(err.Error(), "weights differ (want ") {
		t.Fatalf("Compare without detail: %v", err)
	}

	// Digest text forms.
	var d Digest
	if err := d.UnmarshalText([]byte("zz")); err == nil {
		t.Fatal("short digest accepted")
	}
	if err := d.UnmarshalText([]byte(strings.Repeat("g", 64))); err == nil {
		t.Fatal("non-hex digest accepted")
	}
	if err := d.UnmarshalText([]byte(id.Digest.String())); err != nil || d != id.Digest {
		t.Fatalf("digest round trip: %v", err)
	}
}

// BenchmarkIdentity reports the hashing rate over 64 MiB of weights (SHA-256 bound).
func BenchmarkIdentity(b *testing.B) {
	const n = 16
	data := make([]byte, 64<<20)
	for i := 0; i < len(data); i += 8 {
		binary.LittleEndian.PutUint64(data[i:], uint64(i)*0x9e3779b97f4a7c15)
	}
	in := IdentityInput{Config: []byte("{}")}
	chunk := len(data) / n
	for i := 0; i < n; i++ {
		in.Tensors = append(in.Tensors, TensorInput{
			Name: "t" + string(rune('a'+i)), DType: "U8", Shape: []int{chunk}, Data: data[i*chunk : (i+1)*chunk],
		})
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ComputeIdentity(in); err != nil {
			b.Fatal(err)
		}
	}
}
