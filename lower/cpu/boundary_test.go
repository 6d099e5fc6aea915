package cpu_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"gelo/ir"
	"gelo/lower/cpu"
	"gelo/lower/cpu/kernels"
	"gelo/lower/cpu/mask"
	"gelo/models"
)

// The boundary ops (ir/ops_protect.go) and the fused ops whose work is
// done in the backend rather than in one kernel (concat_proj's stacked
// weights and column slices, swiglu over a gate|up product or straight
// from the unmasked stack), each compiled as a tiny IR graph by the cpu
// backend and held to the composition it stands for. Where the arithmetic
// is the same in the same order the comparison is bit for bit; the one
// tolerance (a product that went through mask, the device and unmask) is
// explained where it is used.

var testKey = []byte("boundary-test-session-key-32byte")

var (
	tinyOnce sync.Once
	tiny     *models.Weights
)

// tinyWeights are qwen3-tiny's synthetic weights: the graphs that need a
// device matmul read its [64, 64], [32, 64] and [192, 64] projections.
func tinyWeights(t *testing.T) *models.Weights {
	t.Helper()
	tinyOnce.Do(func() {
		cfg, err := models.Variant("qwen3-tiny")
		if err == nil {
			tiny = models.Synthesize(cfg, 1)
		}
	})
	if tiny == nil || tiny.Err() != nil {
		t.Fatal("qwen3-tiny weights")
	}
	return tiny
}

func weight(t *testing.T, name string) []float32 {
	t.Helper()
	w, _, err := tinyWeights(t).Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// program compiles the graph text (its D stands for the row width d) on a
// fresh backend, so every program may run pass 1.
func program(t *testing.T, workers int, text string, d int, bind map[string]int) *cpu.Program {
	t.Helper()
	g, err := ir.ParseGraph(strings.ReplaceAll(text, "D", fmt.Sprint(d)))
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	be := cpu.New(tinyWeights(t), cpu.Options{Workers: workers, SessionKey: testKey})
	t.Cleanup(be.Close)
	p, err := be.Compile(g, bind)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func set(t *testing.T, p *cpu.Program, name string, v []float32) {
	t.Helper()
	buf, err := p.Float32(name)
	if err != nil {
		t.Fatal(err)
	}
	if len(buf) != len(v) {
		t.Fatalf("input %s holds %d values, test data %d", name, len(buf), len(v))
	}
	copy(buf, v)
}

func get(t *testing.T, p *cpu.Program, name string) []float32 {
	t.Helper()
	buf, err := p.Float32(name)
	if err != nil {
		t.Fatal(err)
	}
	return append([]float32(nil), buf...)
}

// run runs p as forward pass 1 (the pass counter read by the mask ops).
func run(t *testing.T, p *cpu.Program) {
	t.Helper()
	if c, err := p.Int32(ir.PassInput); err == nil {
		c[0], c[1] = 1, 0
	}
	if err := p.Run(); err != nil {
		t.Fatal(err)
	}
}

// passStream is the mask stream pass 1 of the program draws from.
func passStream(t *testing.T) *mask.RNG {
	t.Helper()
	rng, err := mask.NewPassRNG(testKey, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rng.Zeroise)
	return rng
}

func randRows(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(rng.NormFloat64()) + 0.5 // a common component, as real activations have
	}
	return s
}

func checkBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: element %d is %v, want %v (bit for bit)", what, i, got[i], want[i])
		}
	}
}

// rowShapes are (rows, d): one row, odd widths and row counts.
var rowShapes = [][2]int{{1, 1}, {1, 64}, {2, 3}, {13, 33}, {129, 7}}

// TestMeanRows: mean_rows sums each column in float64 in row order and
// rounds the mean once.
func TestMeanRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 10))
	for _, sh := range rowShapes {
		n, d := sh[0], sh[1]
		p := program(t, 1, `graph g(n) {
  %0 = input {name="x"} : f32[n,D] tee secret
  %1 = mean_rows %0 : f32[1,D] tee secret
  return m=%1
}`, d, map[string]int{"n": n})
		x := randRows(rng, n*d)
		set(t, p, "x", x)
		run(t, p)
		want := make([]float32, d)
		for j := range want {
			var s float64
			for i := 0; i < n; i++ {
				s += float64(x[i*d+j])
			}
			want[j] = float32(s / float64(n))
		}
		checkBits(t, fmt.Sprintf("%dx%d mean", n, d), get(t, p, "m"), want)
	}
}

// rowOpCase runs sub_row or add_row over random rows and returns x, m and
// the result.
func rowOpCase(t *testing.T, rng *rand.Rand, op string, n, d int) (x, m, y []float32) {
	p := program(t, 1, `graph g(n) {
  %0 = input {name="x"} : f32[n,D] tee secret
  %1 = input {name="m"} : f32[1,D] tee secret
  %2 = `+op+` %0, %1 : f32[n,D] tee secret
  return y=%2
}`, d, map[string]int{"n": n})
	x, m = randRows(rng, n*d), randRows(rng, d)
	set(t, p, "x", x)
	set(t, p, "m", m)
	run(t, p)
	return x, m, get(t, p, "y")
}

// TestSubRow: sub_row(x, m) is x - m on every row, in float32.
func TestSubRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 11))
	for _, sh := range rowShapes {
		x, m, y := rowOpCase(t, rng, "sub_row", sh[0], sh[1])
		want := make([]float32, len(x))
		for i := range want {
			want[i] = x[i] - m[i%sh[1]]
		}
		checkBits(t, fmt.Sprintf("%dx%d", sh[0], sh[1]), y, want)
	}
}

// TestAddRow: add_row(x, m) is kernels' Add of m to every row.
func TestAddRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 12))
	c := kernels.NewCtx(1)
	defer c.Close()
	for _, sh := range rowShapes {
		n, d := sh[0], sh[1]
		x, m, y := rowOpCase(t, rng, "add_row", n, d)
		want := make([]float32, len(x))
		for r := 0; r < n; r++ {
			c.Add(want[r*d:(r+1)*d], x[r*d:(r+1)*d], m)
		}
		checkBits(t, fmt.Sprintf("%dx%d", n, d), y, want)
	}
}

// TestBiasAdd: a projection's bias, added in the TEE after unmasking,
// gives the bits of the matmul that adds it itself (MatMulT adds the bias
// after the dot product, in float32).
func TestBiasAdd(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 13))
	w := weight(t, "model.layers.0.self_attn.q_proj.weight") // [64, 64]
	b := weight(t, "model.layers.0.input_layernorm.weight")  // [64]: a public row to add
	for _, n := range []int{1, 3, 13} {
		p := program(t, 1, `graph g(n) {
  %0 = input {name="x"} : f32[n,64] tee secret
  %1 = weight {name="model.layers.0.self_attn.q_proj.weight"} : f32[64,64] tee public
  %2 = weight {name="model.layers.0.input_layernorm.weight"} : f32[64] tee public
  %3 = matmul %0, %1 : f32[n,64] tee secret
  %4 = bias_add %3, %2 : f32[n,64] tee secret
  return y=%4
}`, 0, map[string]int{"n": n})
		x := randRows(rng, n*64)
		set(t, p, "x", x)
		run(t, p)
		c := kernels.NewCtx(1)
		want := make([]float32, n*64)
		c.MatMulT(want, x, w, n, 64, 64, b)
		c.Close()
		checkBits(t, fmt.Sprintf("n=%d", n), get(t, p, "y"), want)
	}
}

// TestShieldStrip: shield_strip keeps the first rows; per_row keeps row 0
// of each sequence's block; center adds the mean row's product (the row
// after the data rows) back, bit for bit what add_row does after a plain
// strip.
func TestShieldStrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 14))
	for _, sh := range rowShapes {
		n, d := sh[0], sh[1]
		s := n + 1 + 8
		u := randRows(rng, s*d)
		bind := map[string]int{"n": n, "S_n": s}

		plain := program(t, 1, `graph g(n, S_n) {
  %0 = input {name="u"} : f32[S_n,D] tee secret
  %1 = shield_strip %0 {rows="n"} : f32[n,D] tee secret
  return y=%1
}`, d, bind)
		set(t, plain, "u", u)
		run(t, plain)
		checkBits(t, fmt.Sprintf("%dx%d strip", n, d), get(t, plain, "y"), u[:n*d])

		centred := program(t, 1, `graph g(n, S_n) {
  %0 = input {name="u"} : f32[S_n,D] tee secret
  %1 = shield_strip %0 {center=true, rows="n"} : f32[n,D] tee secret
  return y=%1
}`, d, bind)
		set(t, centred, "u", u)
		run(t, centred)
		composed := program(t, 1, `graph g(n, S_n) {
  %0 = input {name="u"} : f32[S_n,D] tee secret
  %1 = input {name="mean"} : f32[1,D] tee secret
  %2 = shield_strip %0 {rows="n"} : f32[n,D] tee secret
  %3 = add_row %2, %1 : f32[n,D] tee secret
  return y=%3
}`, d, bind)
		set(t, composed, "u", u)
		set(t, composed, "mean", u[n*d:(n+1)*d])
		run(t, composed)
		checkBits(t, fmt.Sprintf("%dx%d centred strip", n, d), get(t, centred, "y"), get(t, composed, "y"))

		// per_row: B = n sequences, each a block of s1 rows.
		s1 := 16
		ub := randRows(rng, n*s1*d)
		perRow := program(t, 1, `graph g(B, S_B) {
  %0 = input {name="u"} : f32[S_B,D] tee secret
  %1 = shield_strip %0 {per_row=true, rows="B"} : f32[B,D] tee secret
  return y=%1
}`, d, map[string]int{"B": n, "S_B": n * s1})
		set(t, perRow, "u", ub)
		run(t, perRow)
		want := make([]float32, 0, n*d)
		for g := 0; g < n; g++ {
			want = append(want, ub[g*s1*d:(g*s1+1)*d]...)
		}
		checkBits(t, fmt.Sprintf("%dx%d per-row strip", n, d), get(t, perRow, "y"), want)
	}
}

// stackCase is one way protect stacks rows for a crossing.
type stackCase struct {
	name string
	// graph: %0 pass, %1 x, and the stack as "stack", the masked rows as
	// "masked"; B is the data rows' dim (per_row masks read the batch B),
	// S the stacked one.
	graph  string
	perRow bool // each row its own block and mask
	center string
}

const (
	centerNone  = ""
	centerRow   = "row" // the mean travels as one more row (shared topology)
	centerInTEE = "tee" // the mean stays in the TEE (prefill)
)

func stackCases(family string) []stackCase {
	head := `graph g(B, S) {
  %0 = input {name="pass"} : i32[2] tee secret
  %1 = input {name="x"} : f32[B,D] tee secret
`
	tail := `  return stack=%2, masked=%3
}`
	f := `family="` + family + `"`
	return []stackCase{
		{name: "plain", center: centerNone, graph: head +
			`  %2 = shield_stack %1, %0 {energy=4.0, ` + f + `, k_min=8, rows="S"} : f32[S,D] tee secret
  %3 = mask %2, %0 {` + f + `, slot=0} : f32[S,D] tee public
` + tail},
		{name: "per-row", perRow: true, graph: head +
			`  %2 = shield_stack %1, %0 {energy=4.0, ` + f + `, k_min=8, per_row=true, rows="S"} : f32[S,D] tee secret
  %3 = mask %2, %0 {` + f + `, per_row=true, slot=0} : f32[S,D] tee public
` + tail},
		{name: "centred", center: centerRow, graph: head +
			`  %2 = shield_stack %1, %0 {center=true, energy=4.0, ` + f + `, k_min=8, rows="S"} : f32[S,D] tee secret
  %3 = mask %2, %0 {` + f + `, slot=0} : f32[S,D] tee public
` + tail},
		{name: "centred-in-tee", center: centerInTEE, graph: head +
			`  %2 = mean_rows %1 : f32[1,D] tee secret
  %3 = sub_row %1, %2 : f32[B,D] tee secret
  %4 = shield_stack %3, %0, %1 {energy=4.0, ` + f + `, k_min=8, rows="S"} : f32[S,D] tee secret
  %5 = mask %4, %0 {` + f + `, slot=0} : f32[S,D] tee public
  return stack=%4, masked=%5, centred=%3
}`},
	}
}

// TestShieldStack replays pass 1's mask stream outside the backend: the
// stack is the data rows (centred as the case says, by the unfused
// mean_rows and sub_row) followed by mask.FillShield's rows, drawn in the
// same order from the same stream, and the masked rows are the sampled
// mask applied to that stack, bit for bit. Both families, one row to odd
// many, 1 and 3 workers.
func TestShieldStack(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 15))
	for _, family := range []string{"hd3", "haar"} {
		for _, sc := range stackCases(family) {
			for _, sh := range [][2]int{{1, 64}, {3, 7}, {13, 33}, {57, 64}} {
				for _, workers := range []int{1, 3} {
					n, d := sh[0], sh[1]
					t.Run(fmt.Sprintf("%s/%s/%dx%d/w%d", family, sc.name, n, d, workers), func(t *testing.T) {
						p := program(t, workers, sc.graph, d, map[string]int{"B": n})
						x := randRows(rng, n*d)
						set(t, p, "x", x)
						run(t, p)
						stack := get(t, p, "stack")

						rs := passStream(t)
						want, groups := fillExpected(t, sc, x, n, d, len(stack)/d, rs)
						if sc.center == centerInTEE {
							checkBits(t, "centred rows", stack[:n*d], get(t, p, "centred"))
						}
						checkBits(t, "stack", stack, want)

						masked := append([]float32(nil), want...)
						applyMasks(t, rs, family, masked, groups, d) // the stream, past the fill
						checkBits(t, "masked", get(t, p, "masked"), masked)
					})
				}
			}
		}
	}
}

// fillExpected builds the stack from the unfused pieces, drawing the
// shield rows from rng as the backend does; it returns the stack and the
// number of mask groups.
func fillExpected(t *testing.T, sc stackCase, x []float32, n, d, s int, rng *mask.RNG) ([]float32, int) {
	t.Helper()
	want := make([]float32, s*d)
	if sc.perRow {
		s1 := s / n
		for g := 0; g < n; g++ {
			blk := want[g*s1*d : (g+1)*s1*d]
			copy(blk, x[g*d:(g+1)*d])
			if err := mask.FillShield(blk[d:], s1-1, d, x[g*d:(g+1)*d], 1, 4, rng); err != nil {
				t.Fatal(err)
			}
		}
		return want, n
	}
	data := n
	switch sc.center {
	case centerRow, centerInTEE:
		mean, centred := unfusedCentre(t, x, n, d)
		copy(want, centred)
		if sc.center == centerRow {
			copy(want[n*d:], mean)
			data++
		}
	default:
		copy(want, x)
	}
	// The shield energy is measured against the uncentred rows.
	if err := mask.FillShield(want[data*d:], s-data, d, x, n, 4, rng); err != nil {
		t.Fatal(err)
	}
	return want, 1
}

// unfusedCentre runs mean_rows then sub_row on the backend.
func unfusedCentre(t *testing.T, x []float32, n, d int) (mean, centred []float32) {
	t.Helper()
	p := program(t, 1, `graph g(n) {
  %0 = input {name="x"} : f32[n,D] tee secret
  %1 = mean_rows %0 : f32[1,D] tee secret
  %2 = sub_row %0, %1 : f32[n,D] tee secret
  return mean=%1, centred=%2
}`, d, map[string]int{"n": n})
	set(t, p, "x", x)
	run(t, p)
	return get(t, p, "mean"), get(t, p, "centred")
}

// applyMasks samples one mask per group from rng, in group order (as the
// backend does at a slot's first use), and applies each to its block.
func applyMasks(t *testing.T, rng *mask.RNG, family string, rows []float32, groups, d int) []mask.Mask {
	t.Helper()
	blk := len(rows) / groups
	var ms []mask.Mask
	for g := 0; g < groups; g++ {
		ws := mask.NewWorkspace(1)
		m, err := ws.Sample(family, blk/d, rng)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	for g, m := range ms {
		if err := m.Apply(rows[g*blk:(g+1)*blk], d); err != nil {
			t.Fatal(err)
		}
	}
	return ms
}

// TestMaskUnmask runs a whole crossing (shield_stack, mask, a device
// matmul, unmask, shield_strip) and checks unmask bit for bit against the
// replayed mask's Unapply of what the device returned. The end result is
// X W^T only up to rounding: A^T (A X W^T) = X W^T in exact arithmetic,
// and in float32 the mixing with shield rows of 4x the data's energy costs
// a few ulps of the stack's magnitude, so that comparison has a tolerance.
func TestMaskUnmask(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 16))
	w := weight(t, "model.layers.0.self_attn.q_proj.weight") // [64, 64]
	for _, family := range []string{"hd3", "haar"} {
		for _, perRow := range []bool{false, true} {
			for _, n := range []int{1, 3, 13, 57} {
				for _, workers := range []int{1, 3} {
					t.Run(fmt.Sprintf("%s/per_row=%v/n%d/w%d", family, perRow, n, workers), func(t *testing.T) {
						pr := ""
						if perRow {
							pr = "per_row=true, "
						}
						f := `family="` + family + `"`
						p := program(t, workers, `graph g(B, S) {
  %0 = input {name="pass"} : i32[2] tee secret
  %1 = input {name="x"} : f32[B,64] tee secret
  %2 = shield_stack %1, %0 {energy=4.0, `+f+`, k_min=8, `+pr+`rows="S"} : f32[S,64] tee secret
  %3 = mask %2, %0 {`+f+`, `+pr+`slot=0} : f32[S,64] tee public
  %4 = weight {name="model.layers.0.self_attn.q_proj.weight"} : f32[64,64] device public
  %5 = matmul %3, %4 : f32[S,64] device public
  %6 = unmask %5, %0 {`+f+`, `+pr+`slot=0} : f32[S,64] tee secret
  %7 = shield_strip %6 {`+pr+`rows="B"} : f32[B,64] tee secret
  return stack=%2, product=%5, unmasked=%6, y=%7
}`, 0, map[string]int{"B": n})
						x := randRows(rng, n*64)
						set(t, p, "x", x)
						run(t, p)
						stack, product := get(t, p, "stack"), get(t, p, "product")
						s, groups := len(stack)/64, 1
						if perRow {
							groups = n
						}

						// Replay: the shield fill, then the masks.
						rs := passStream(t)
						sc := stackCase{perRow: perRow}
						fillExpected(t, sc, x, n, 64, s, rs)
						ms := applyMasks(t, rs, family, append([]float32(nil), stack...), groups, 64)
						want := append([]float32(nil), product...)
						blk := len(want) / groups
						for g, m := range ms {
							if err := m.Unapply(want[g*blk:(g+1)*blk], 64); err != nil {
								t.Fatal(err)
							}
						}
						checkBits(t, "unmask", get(t, p, "unmasked"), want)

						c := kernels.NewCtx(1)
						defer c.Close()
						plain := make([]float32, s*64)
						c.MatMulT(plain, stack, w, s, 64, 64, nil)
						checkClose(t, "unmask(device(mask(stack)))", get(t, p, "unmasked"), plain)
						ref := make([]float32, n*64)
						c.MatMulT(ref, x, w, n, 64, 64, nil)
						checkClose(t, "y", get(t, p, "y"), ref)
					})
				}
			}
		}
	}
}

// checkClose allows 1e-5 of the largest magnitude in want: the float32
// rounding of mixing s <= 128 rows of comparable size, twice (A, then
// A^T), is far below it; a wrong row, sign or mask is far above it.
func checkClose(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	var scale float64
	for _, v := range want {
		scale = max(scale, math.Abs(float64(v)))
	}
	for i := range got {
		if e := math.Abs(float64(got[i]) - float64(want[i])); e > 1e-5*scale {
			t.Fatalf("%s: element %d is %v, want %v (error %.3g, %.3g of the largest value)", what, i, got[i], want[i], e, e/scale)
		}
	}
}

// TestSwiGLUStripFolded: the epilogue fusion's swiglu{rows} over the
// unmasked stack equals shield_strip then swiglu; per_row reads row 0 of
// each sequence's block.
func TestSwiGLUStripFolded(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 17))
	for _, perRow := range []bool{false, true} {
		for _, sh := range [][2]int{{1, 1}, {3, 7}, {13, 96}} {
			n, f := sh[0], sh[1]
			pr := ""
			bind := map[string]int{"R": n, "S": n + 8}
			if perRow {
				pr = "per_row=true, "
				bind["S"] = n * 16
			}
			text := func(body string) string {
				return strings.ReplaceAll(`graph g(R, S) {
  %0 = input {name="u"} : f32[S,F2] tee secret
`+body+`}`, "F2", fmt.Sprint(2*f))
			}
			fused := program(t, 1, text(`  %1 = swiglu %0 {`+pr+`rows="R"} : f32[R,D] tee secret
  return y=%1
`), f, bind)
			unfused := program(t, 1, text(`  %1 = shield_strip %0 {`+pr+`rows="R"} : f32[R,F2] tee secret
  %2 = swiglu %1 : f32[R,D] tee secret
  return y=%2
`), f, bind)
			u := randRows(rng, bind["S"]*2*f)
			set(t, fused, "u", u)
			set(t, unfused, "u", u)
			run(t, fused)
			run(t, unfused)
			checkBits(t, fmt.Sprintf("per_row=%v %dx%d", perRow, n, f), get(t, fused, "y"), get(t, unfused, "y"))
		}
	}
}

// TestConcatProjGraph: concat_proj's graph (one device matmul over
// concat_weights, then slice_cols, and swiglu reading the gate|up product)
// against the unfused graph's separate matmuls, silu and mul.
func TestConcatProjGraph(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 18))
	const l0 = "model.layers.0."
	for _, n := range []int{1, 5, 13} {
		for _, place := range []string{"device", "tee"} {
			fused := program(t, 1, strings.ReplaceAll(`graph g(n) {
  %0 = input {name="x"} : f32[n,64] tee secret
  %1 = weight {name="`+l0+`self_attn.q_proj.weight"} : f32[64,64] PL public
  %2 = weight {name="`+l0+`self_attn.k_proj.weight"} : f32[32,64] PL public
  %3 = weight {name="`+l0+`self_attn.v_proj.weight"} : f32[32,64] PL public
  %4 = concat_weights %1, %2, %3 : f32[128,64] PL public
  %5 = matmul %0, %4 : f32[n,128] PL secret
  %6 = slice_cols %5 {start=0, width=64} : f32[n,64] tee secret
  %7 = slice_cols %5 {start=64, width=32} : f32[n,32] tee secret
  %8 = slice_cols %5 {start=96, width=32} : f32[n,32] tee secret
  %9 = weight {name="`+l0+`mlp.gate_proj.weight"} : f32[192,64] PL public
  %10 = weight {name="`+l0+`mlp.up_proj.weight"} : f32[192,64] PL public
  %11 = concat_weights %9, %10 : f32[384,64] PL public
  %12 = matmul %0, %11 : f32[n,384] PL secret
  %13 = swiglu %12 : f32[n,192] tee secret
  return q=%6, k=%7, v=%8, mlp=%13
}`, "PL", place), 0, map[string]int{"n": n})
			unfused := program(t, 1, strings.ReplaceAll(`graph g(n) {
  %0 = input {name="x"} : f32[n,64] tee secret
  %1 = weight {name="`+l0+`self_attn.q_proj.weight"} : f32[64,64] PL public
  %2 = matmul %0, %1 : f32[n,64] PL secret
  %3 = weight {name="`+l0+`self_attn.k_proj.weight"} : f32[32,64] PL public
  %4 = matmul %0, %3 : f32[n,32] PL secret
  %5 = weight {name="`+l0+`self_attn.v_proj.weight"} : f32[32,64] PL public
  %6 = matmul %0, %5 : f32[n,32] PL secret
  %7 = weight {name="`+l0+`mlp.gate_proj.weight"} : f32[192,64] PL public
  %8 = matmul %0, %7 : f32[n,192] PL secret
  %9 = weight {name="`+l0+`mlp.up_proj.weight"} : f32[192,64] PL public
  %10 = matmul %0, %9 : f32[n,192] PL secret
  %11 = silu %8 : f32[n,192] tee secret
  %12 = mul %11, %10 : f32[n,192] tee secret
  return q=%2, k=%4, v=%6, mlp=%12
}`, "PL", place), 0, map[string]int{"n": n})
			x := randRows(rng, n*64)
			for _, p := range []*cpu.Program{fused, unfused} {
				set(t, p, "x", x)
				run(t, p)
			}
			for _, out := range []string{"q", "k", "v", "mlp"} {
				checkBits(t, fmt.Sprintf("n=%d %s %s", n, place, out), get(t, fused, out), get(t, unfused, out))
			}
		}
	}
}
