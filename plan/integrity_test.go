package plan_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"gelo/device"
	"gelo/formats"
	"gelo/lower/cpu"
	"gelo/passes"
	"gelo/plan"
	"gelo/runtime"
)

// integrityRun compiles qwen3-tiny at level with K probes per crossing
// (every linear op offloaded), puts liar configured by setup in front of
// the local device, and decodes steps greedily; it returns the tokens, the
// first error and the engine's probe statistics.
func integrityRun(t *testing.T, level, weights string, k int, key byte, steps int, setup func(*device.LiarDevice)) ([]int, error, cpu.ProbeStats) {
	t.Helper()
	return integrityOn(t, "local", level, weights, k, key, steps, setup)
}

// integrityOn is integrityRun on the named device.
func integrityOn(t *testing.T, dev, level, weights string, k int, key byte, steps int, setup func(*device.LiarDevice)) ([]int, error, cpu.ProbeStats) {
	t.Helper()
	m, w := offloaded(t, level, weights, k)
	var liar *device.LiarDevice
	eo := plan.EngineOptions{Device: dev, Wrap: func(d device.Device) device.Device {
		liar = device.NewLiar(d)
		if setup != nil {
			setup(liar)
		}
		return liar
	}}
	sessionKey := slices.Repeat([]byte{key}, 32)
	eng, err := plan.NewEngine(eo, w, sessionKey, m)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	s, err := runtime.NewSession(m, eng.Runtime, runtime.Options{MaxContext: 200})
	if err != nil {
		t.Fatal(err)
	}
	var toks []int
	lg, err := s.Prefill([]int32{1, 2, 3, 4, 5})
	for i := 0; err == nil && i < steps; i++ {
		best := runtime.Argmax(lg)
		toks = append(toks, best)
		lg, err = s.Decode(int32(best))
	}
	if err != nil {
		// Once aborted, the session stays aborted, with the same error.
		if _, again := s.Decode(1); !errors.Is(again, cpu.ErrIntegrity) && errors.Is(err, cpu.ErrIntegrity) {
			t.Errorf("after an abort the next step gives %v, want the integrity error again", again)
		}
	}
	return toks, err, eng.CPU.ProbeStats()
}

// Probes change nothing an honest device computes: the same tokens with
// K = 0 and K = 2, in every weight format and at the protected levels,
// and no false alarm; the honest statistic's margin is logged.
func TestProbesHonestNoFalseAlarm(t *testing.T) {
	for _, level := range []string{passes.LevelNone, passes.Level8x4, passes.LevelExact} {
		for _, w := range []string{formats.F32, formats.BF16, formats.Q8_0, formats.Q4_0, formats.Int8} {
			ref, err, _ := integrityRun(t, level, w, 0, 1, 32, nil)
			if err != nil {
				t.Fatalf("%s %s, no probes: %v", level, w, err)
			}
			got, err, st := integrityRun(t, level, w, 2, 1, 32, nil)
			if err != nil {
				t.Fatalf("%s %s: an honest device fails its probes: %v", level, w, err)
			}
			if !slices.Equal(got, ref) {
				t.Errorf("%s %s: tokens %v with probes, %v without", level, w, got, ref)
			}
			t.Logf("%s %s: %d honest checks, largest statistic %.2e of its tolerance", level, w, st.Checks, st.Worst)
		}
	}
}

// Every liar class is caught: in each of several sessions (fresh keys, so
// fresh pools) a lie on one product of a decode step aborts the session
// with the integrity error, and nothing after it runs. These lies are far
// above the tolerance, where Bound predicts a miss below 1e-6 per lie at
// K = 2, so the prediction is: caught every time.
func TestLiarsAreCaught(t *testing.T) {
	const trials = 6
	for _, w := range []string{formats.F32, formats.Q8_0, formats.Int8} {
		for _, lie := range device.Lies() {
			caught := 0
			for tr := range trials {
				call := 40 + 7*tr // a product of a decode step (prefill is the first 9)
				_, err, _ := integrityRun(t, passes.Level8x4, w, 2, byte(10+tr), 16, func(l *device.LiarDevice) {
					l.Lie, l.Amount, l.Row = lie, 0.5, tr
					l.At = func(c int, _ string) bool { return c == call }
				})
				switch {
				case errors.Is(err, cpu.ErrIntegrity):
					caught++
				case err != nil:
					t.Fatalf("%s %v: %v", w, lie, err)
				}
			}
			t.Logf("%s weights, %v: caught %d of %d", w, lie, caught, trials)
			if caught != trials {
				t.Errorf("%s weights, %v: caught %d of %d lies", w, lie, caught, trials)
			}
		}
	}
}

// Without probes the same lie goes unseen and changes what is decoded:
// the probes are what catches it.
func TestWithoutProbesLiesGoUnseen(t *testing.T) {
	ref, err, _ := integrityRun(t, passes.Level8x4, formats.F32, 0, 3, 24, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err, _ := integrityRun(t, passes.Level8x4, formats.F32, 0, 3, 24, func(l *device.LiarDevice) {
		l.Lie = device.OtherWeight
	})
	if err != nil {
		t.Fatalf("without probes a lie is not detected, yet: %v", err)
	}
	if slices.Equal(got, ref) {
		t.Fatalf("the lie changed nothing (%v): the test cannot tell", got)
	}
}

// The abort is uniform: whichever decode crossing lies, the error is the
// same, and it names no crossing, row or probe.
func TestAbortIsUniform(t *testing.T) {
	var msgs []string
	for _, call := range []int{12, 20, 47} {
		_, err, _ := integrityRun(t, passes.Level8x4, formats.F32, 1, 4, 8, func(l *device.LiarDevice) {
			l.Lie = device.ZeroRows
			l.At = func(c int, _ string) bool { return c == call }
		})
		if !errors.Is(err, cpu.ErrIntegrity) || !strings.HasSuffix(err.Error(), cpu.ErrIntegrity.Error()) {
			t.Fatalf("lie at call %d: %v", call, err)
		}
		msgs = append(msgs, err.Error())
	}
	if msgs[0] != msgs[1] || msgs[1] != msgs[2] {
		t.Errorf("abort errors differ by crossing: %q", msgs)
	}
}

// No false alarm over 10,000 honest crossings per weight format (gelo-8x4,
// every product checked with K = 2 over fresh sessions).
func TestNoFalseAlarmTenThousand(t *testing.T) {
	for _, w := range []string{formats.F32, formats.BF16, formats.Q8_0, formats.Q4_0, formats.Int8} {
		var checks int64
		worst := 0.0
		for key := byte(50); checks < 10000; key++ {
			_, err, st := integrityRun(t, passes.Level8x4, w, 2, key, 190, nil)
			if err != nil {
				t.Fatalf("%s, session %d: honest device fails: %v", w, key, err)
			}
			checks += st.Checks
			worst = max(worst, st.Worst)
		}
		t.Logf("%s: %d honest crossings, no false alarm; largest statistic %.2e of its tolerance", w, checks, worst)
	}
}

// The probes need no backend code: on the gomlx device (its pure-Go
// engine) honest products pass with the same tokens as the local device,
// and a lie is caught.
func TestProbesOnGomlxDevice(t *testing.T) {
	ref, err, _ := integrityRun(t, passes.Level8x4, formats.F32, 2, 7, 12, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err, st := integrityOn(t, "gomlx:go", passes.Level8x4, formats.F32, 2, 7, 12, nil)
	if err != nil {
		t.Fatalf("gomlx device, honest: %v", err)
	}
	if !slices.Equal(got, ref) {
		t.Errorf("gomlx device decodes %v, local %v", got, ref)
	}
	t.Logf("gomlx device: %d honest checks, largest statistic %.2e of its tolerance", st.Checks, st.Worst)
	_, err, _ = integrityOn(t, "gomlx:go", passes.Level8x4, formats.F32, 2, 7, 12, func(l *device.LiarDevice) {
		l.Lie, l.Amount = device.ScaleRow, 0.01
		l.At = func(c int, _ string) bool { return c == 30 }
	})
	if !errors.Is(err, cpu.ErrIntegrity) {
		t.Errorf("gomlx device, a row scaled by 1.01: %v, want the integrity error", err)
	}
}

// The probes change nothing the device sees: at every level that crosses,
// with K = 0 and K = 4 under one session key, the device receives the same
// payloads bit for bit (in both directions), so every attack of the
// harness measures the same thing with or without them.
func TestProbesAddNothingTheDeviceSees(t *testing.T) {
	for _, level := range []string{passes.LevelNone, passes.Level8x4, passes.LevelSpan, passes.LevelWhiten, passes.LevelExact} {
		var recs [2][]device.Crossing
		for i, k := range []int{0, 4} {
			m, w := offloaded(t, level, formats.F32, k)
			eng, err := plan.NewEngine(plan.EngineOptions{Spy: true}, w, make([]byte, 32), m)
			if err != nil {
				t.Fatal(err)
			}
			s, err := runtime.NewSession(m, eng.Runtime, runtime.Options{MaxContext: 32})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Generate([]int32{7, 8, 9, 10, 11, 12}, runtime.GenerateOptions{MaxTokens: 6}); err != nil {
				t.Fatal(err)
			}
			recs[i] = eng.Spy.Record()
			eng.Close()
		}
		if len(recs[0]) == 0 || len(recs[0]) != len(recs[1]) {
			t.Fatalf("%s: %d crossings without probes, %d with", level, len(recs[0]), len(recs[1]))
		}
		for j := range recs[0] {
			a, b := recs[0][j], recs[1][j]
			if a.Dir != b.Dir || a.Weight != b.Weight || a.Rows != b.Rows || !slices.EqualFunc(a.Data, b.Data, func(x, y float32) bool {
				return math.Float32bits(x) == math.Float32bits(y)
			}) {
				t.Fatalf("%s: crossing %d differs with probes (%s %s)", level, j, a.Dir, a.Weight)
			}
		}
	}
}
