package plan_test

import (
	"errors"
	"math"
	"slices"
	"testing"

	"gelo/device"
	"gelo/formats"
	"gelo/ir"
	"gelo/lower/cpu"
	"gelo/lwe"
	"gelo/models"
	"gelo/passes"
	"gelo/plan"
	"gelo/plan/planfile"
	"gelo/runtime"
)

// TestLatticeLogits is the numerics gate of level lwe on qwen3-tiny with
// every linear op offloaded (the cost model keeps its 64-wide projections
// local): over 64 greedy steps it decodes the tokens --security none
// decodes in the same int8 weights, with logits within latticeTol of
// none's. The difference is the encoding of each crossing's rows, not
// arithmetic error: x is rounded to a per-row step that leaves 15-17 bits
// of |x|_2 (lwe.EffectiveBits), and decode keeps the lattice noise
// W_q e / Delta, 0.22x that rounding's standard deviation (lwe/doc.go);
// none multiplies the f32 rows. Measured: max |dlogit| 1.9e-4, rms 3.7e-5.
const latticeTol = 2e-3

func TestLatticeLogits(t *testing.T) {
	prompt := []int32{1, 2, 3, 4, 5}
	const steps = 64
	ref, refToks := func() ([][]float32, []int) {
		m, w := compiledTiny(t, passes.LevelNone, formats.Int8, 0, true)
		return runLogits(t, m, w, passes.LevelNone, prompt, steps)
	}()
	m, w := compiledTiny(t, passes.LevelLWE, formats.Int8, 0, true)
	got, toks := runLogits(t, m, w, passes.LevelLWE, prompt, steps)
	var worst, sum float64
	var n int
	for p := range ref {
		for j := range ref[p] {
			d := math.Abs(float64(got[p][j] - ref[p][j]))
			worst = max(worst, d)
			sum += d * d
			n++
		}
	}
	t.Logf("lwe vs none (int8): max |dlogit| %.3g, rms %.3g over %d passes", worst, math.Sqrt(sum/float64(n)), len(ref))
	if worst > latticeTol {
		t.Errorf("max |dlogit| %.3g > %g", worst, latticeTol)
	}
	for i := range refToks {
		if toks[i] != refToks[i] {
			t.Fatalf("step %d: lwe decodes %d, none %d (tokens %v vs %v)", i, toks[i], refToks[i], toks, refToks)
		}
	}
}

// TestLatticeProbes: under level lwe the probes (Freivalds modulo 2^32,
// lwe.Probes) change nothing an honest device computes, and every liar
// class on one product of a decode step aborts the session with the
// integrity error, in several sessions (fresh keys: fresh probe vectors
// and pads). The first 9 device calls compute the hints (checked at load
// by their own Freivalds test), the next 9 are the prefill's. A decode
// product at B = 1 is one row, which PermuteRows leaves as it is (no lie):
// that class lies on a product of the prefill's 5 rows instead.
func TestLatticeProbes(t *testing.T) {
	ref, err, _ := integrityRun(t, passes.LevelLWE, formats.Int8, 0, 1, 24, nil)
	if err != nil {
		t.Fatalf("no probes: %v", err)
	}
	got, err, st := integrityRun(t, passes.LevelLWE, formats.Int8, 2, 1, 24, nil)
	if err != nil {
		t.Fatalf("an honest device fails its probes: %v", err)
	}
	if !slices.Equal(got, ref) {
		t.Errorf("tokens %v with probes, %v without", got, ref)
	}
	if st.Checks == 0 {
		t.Fatal("no probe ran")
	}
	const trials = 4
	for _, lie := range device.Lies() {
		caught := 0
		for tr := range trials {
			call := 40 + 7*tr
			if lie == device.PermuteRows {
				call = 9 + 2*tr
			}
			_, err, _ := integrityRun(t, passes.LevelLWE, formats.Int8, 2, byte(20+tr), 16, func(l *device.LiarDevice) {
				l.Lie, l.Amount, l.Row = lie, 0.5, tr
				l.At = func(c int, _ string) bool { return c == call }
			})
			switch {
			case errors.Is(err, cpu.ErrIntegrity):
				caught++
			case err != nil:
				t.Fatalf("%v: %v", lie, err)
			}
		}
		t.Logf("%v: caught %d of %d", lie, caught, trials)
		if caught != trials {
			t.Errorf("%v: caught %d of %d lies", lie, caught, trials)
		}
	}
}

// TestLatticeSessionsSharePools: sessions on one engine compile their own
// decode programs but draw from one pad pool per decode crossing; two
// sessions interleaved step by step, then a third after them, all decode
// (no pad held across passes, so none is lost with a dropped program), and
// the third makes no new pool.
func TestLatticeSessionsSharePools(t *testing.T) {
	m, w := compiledTiny(t, passes.LevelLWE, formats.Int8, 2, true)
	eng, err := plan.NewEngine(plan.EngineOptions{}, w, make([]byte, 32), m)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	newSession := func() *runtime.Session {
		s, err := runtime.NewSession(m, eng.Runtime, runtime.Options{MaxContext: 64})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Prefill([]int32{1, 2, 3, 4}); err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := newSession(), newSession()
	for range 40 {
		for _, s := range []*runtime.Session{a, b} {
			if _, err := s.Decode(5); err != nil {
				t.Fatal(err)
			}
		}
	}
	pools := eng.CPU.LatticePools()
	c := newSession()
	for range 40 {
		if _, err := c.Decode(5); err != nil {
			t.Fatal(err)
		}
	}
	if pools == 0 || eng.CPU.LatticePools() != pools {
		t.Errorf("%d decode pools after two sessions, %d after a third", pools, eng.CPU.LatticePools())
	}
}

// TestLatticePrefillFromStock: once a decode has made its pad pools, a
// short prompt's pads come from them (the first prompt, before any pool,
// fills its own), and the tokens are those of the first session: the
// pads differ, the decoded values only by the lattice noise.
func TestLatticePrefillFromStock(t *testing.T) {
	m, w := compiledTiny(t, passes.LevelLWE, formats.Int8, 2, true)
	eng, err := plan.NewEngine(plan.EngineOptions{}, w, make([]byte, 32), m)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	run := func() ([]int32, int64) {
		s, err := runtime.NewSession(m, eng.Runtime, runtime.Options{MaxContext: 64})
		if err != nil {
			t.Fatal(err)
		}
		before := eng.CPU.LatticeStockPads()
		logits, err := s.Prefill([]int32{1, 2, 3, 4, 5})
		if err != nil {
			t.Fatal(err)
		}
		drawn := eng.CPU.LatticeStockPads() - before
		var toks []int32
		for range 12 {
			tok := int32(runtime.Argmax(logits))
			toks = append(toks, tok)
			if logits, err = s.Decode(tok); err != nil {
				t.Fatal(err)
			}
		}
		return toks, drawn
	}
	first, drawn := run()
	if drawn != 0 {
		t.Fatalf("the first prompt drew %d pads from stock before any decode pool", drawn)
	}
	second, drawn := run()
	if drawn < 5 { // 5 a crossing, the LM head's one row
		t.Fatalf("the second prompt of 5 rows drew %d pads from stock", drawn)
	}
	t.Logf("the second prompt drew %d pads from stock", drawn)
	if !slices.Equal(first, second) {
		t.Fatalf("tokens %v with the prompt's own pads, %v with pads from stock", first, second)
	}
}

// TestLatticeSealRoundTrip: an lwe plan seals, decodes and reopens (the
// plan file's meta check rebuilt the options without their weight format,
// so every lwe plan file was refused on read-back: gelo serve --security
// lwe failed to start), and the reopened plan runs.
func TestLatticeSealRoundTrip(t *testing.T) {
	model, err := models.Open(models.DefaultVariant, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	o := plan.Level(passes.LevelLWE)
	o.OffloadAll = true
	_, id, data := seal(t, model, o, "")
	dec, err := planfile.Decode(data)
	if err != nil {
		t.Fatalf("an lwe plan does not read back: %v", err)
	}
	if dec.Passes.WeightFormat != formats.F32 || dec.Passes.Security != passes.LevelLWE { // f32: the TEE-local ops' format (the device's is int8)
		t.Fatalf("sealed passes %+v", dec.Passes)
	}
	got, gotID, err := plan.OpenSealed("l.gelo", dec, plan.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	if gotID.Digest != id.Digest {
		t.Fatalf("reopened identity %s, sealed %s", gotID.Digest, id.Digest)
	}
}

// TestLatticeReusedPadsControl: the harness's insecure control
// (EngineOptions.ReusePads) really reuses pads: the difference of two
// decode rows sent to one weight is Delta times a small integer in every
// word; with the level's fresh pads a word of it is a multiple of Delta
// about 1 / Delta of the time.
func TestLatticeReusedPadsControl(t *testing.T) {
	m, w := compiledTiny(t, passes.LevelLWE, formats.Int8, 0, true)
	delta := uint32(lwe.Default.Delta)
	for _, reuse := range []bool{false, true} {
		eng, err := plan.NewEngine(plan.EngineOptions{Spy: true, ReusePads: reuse}, w, make([]byte, 32), m)
		if err != nil {
			t.Fatal(err)
		}
		s, err := runtime.NewSession(m, eng.Runtime, runtime.Options{MaxContext: 64})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Prefill([]int32{1, 2, 3, 4}); err != nil {
			t.Fatal(err)
		}
		eng.Spy.Reset()
		for tok := range int32(6) {
			if _, err := s.Decode(5 + tok); err != nil {
				t.Fatal(err)
			}
		}
		byWeight := map[string][][]uint32{}
		for _, c := range eng.Spy.Record() {
			if c.Dir == device.ToDevice && c.Words != nil && c.Op != device.LatticeHintOp {
				byWeight[c.Weight] = append(byWeight[c.Weight], c.Words)
			}
		}
		eng.Close()
		var words, divisible int
		for _, rows := range byWeight {
			for i := 1; i < len(rows); i++ {
				for k := range rows[i] {
					words++
					if d := int64(int32(rows[i][k] - rows[i-1][k])); d%int64(delta) == 0 && d/int64(delta) < 1<<20 && -d/int64(delta) < 1<<20 {
						divisible++
					}
				}
			}
		}
		frac := float64(divisible) / float64(words)
		t.Logf("reuse %v: %d of %d difference words are small multiples of Delta (%.3f)", reuse, divisible, words, frac)
		if words == 0 {
			t.Fatal("no decode ciphertext crossed")
		}
		if reuse && frac != 1 || !reuse && frac > 2.0/float64(delta) {
			t.Errorf("reuse %v: %.3f of the difference words are small multiples of Delta", reuse, frac)
		}
	}
}

// TestLatticeTEELocalIsExact: an lwe plan that offloads nothing (qwen3-tiny
// at every width under the cost model, and any model when the device is
// the TEE's own cores) multiplies the plan's own --weights format in the
// TEE, so its logits are exact's bits, in f32 and in bf16.
func TestLatticeTEELocalIsExact(t *testing.T) {
	prompt := []int32{1, 2, 3, 4, 5}
	const steps = 16
	for _, wf := range []string{formats.F32, formats.BF16} {
		em, w := compiledTiny(t, passes.LevelExact, wf, 0, false)
		want, _ := runLogits(t, em, w, passes.LevelExact, prompt, steps)
		for _, speedup := range []float64{0, 1} {
			o := plan.Level(passes.LevelLWE)
			o.Weights, o.Verify, o.DeviceSpeedup = wf, 0, speedup
			src, cfg := tiny(t)
			m, err := plan.Compile(src, cfg, o, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range m.Graphs {
				for _, n := range g.Nodes {
					if n.Op == ir.OpLWEEncode || n.Place == ir.Device && ir.IsLinear(n.Op) {
						t.Fatalf("%s, speedup %g: %s %v = %s crosses", wf, speedup, g.Name, n.ID, n.Op)
					}
				}
			}
			got, _ := runLogits(t, m, w, passes.LevelLWE, prompt, steps)
			for p := range want {
				if !slices.Equal(got[p], want[p]) {
					t.Fatalf("%s, speedup %g: pass %d's logits differ from exact's", wf, speedup, p)
				}
			}
		}
	}
}
