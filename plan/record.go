package plan

import (
	"encoding/hex"
	"fmt"
	"strconv"

	"gelo/device"
	"gelo/device/record"
	"gelo/ir"
	"gelo/models"
	"gelo/runtime"
)

// RecordOptions bound a recorded generation.
type RecordOptions struct {
	// MaxTokens new tokens per prompt, greedy (the first comes from the
	// prefill, so a prompt gives MaxTokens - 1 decode passes).
	MaxTokens  int
	MaxContext int
	// Header is copied into the recording's header (the identity, the
	// options); Record adds the pass count.
	Header map[string]string
	// Keep, if not nil, chooses the crossings recorded (SpyDevice.Keep);
	// a recording for a file keeps all of them.
	Keep func(dir device.Direction, index int, weight string) bool
	// Progress, if not nil, hears each prompt done (done of total).
	Progress func(done, total int)
	// Batch, when above 1, decodes the prompts Batch at a time
	// (runtime.Batch): each is prefilled on its own, then every decode
	// pass carries one row per sequence, the batched decode the shared
	// topology offloads. A decode pass's truth then holds one token per
	// sequence, in slot order, and its Prompt is the group's first. The
	// last group may be smaller.
	Batch int
}

// Record runs greedy generation for each prompt on a fresh session with
// the device wrapped by a spy, marking each forward pass, and returns what
// the device saw and, apart, the truth of every pass.
func Record(m *ir.Module, w *models.Weights, eo EngineOptions, key []byte, prompts [][]int32, ro RecordOptions) (*record.Recording, []record.PassTruth, error) {
	if ro.MaxTokens <= 0 {
		return nil, nil, fmt.Errorf("record: max tokens must be positive, got %d", ro.MaxTokens)
	}
	eo.Spy = true
	eng, err := NewEngine(eo, w, key, m)
	if err != nil {
		return nil, nil, err
	}
	defer eng.Close()
	eng.Spy.Keep = ro.Keep
	if ro.Batch > 1 {
		return recordBatched(eng, m, prompts, ro)
	}
	s, err := runtime.NewSession(m, eng.Runtime, runtime.Options{MaxContext: ro.MaxContext})
	if err != nil {
		return nil, nil, err
	}
	var truth []record.PassTruth
	pass := 0
	run := func(p int, phase string, tokens []int32, f func() ([]float32, error)) ([]float32, error) {
		truth = append(truth, record.PassTruth{Pass: pass, Prompt: p, Phase: phase, Pos: s.Pos(), Tokens: append([]int32(nil), tokens...)})
		eng.Spy.Mark(pass, phase)
		pass++
		return f()
	}
	for p, prompt := range prompts {
		s.Reset()
		if len(prompt) == 0 || len(prompt)+ro.MaxTokens > s.MaxContext() {
			return nil, nil, fmt.Errorf("record: prompt %d: %d tokens + %d new do not fit the context of %d", p, len(prompt), ro.MaxTokens, s.MaxContext())
		}
		logits, err := run(p, models.PhasePrefill, prompt, func() ([]float32, error) { return s.Prefill(prompt) })
		if err != nil {
			return nil, nil, fmt.Errorf("record: prompt %d: %w", p, err)
		}
		for range ro.MaxTokens - 1 {
			tok := int32(runtime.Argmax(logits))
			if logits, err = run(p, models.PhaseDecode, []int32{tok}, func() ([]float32, error) { return s.Decode(tok) }); err != nil {
				return nil, nil, fmt.Errorf("record: prompt %d: %w", p, err)
			}
		}
		if ro.Progress != nil {
			ro.Progress(p+1, len(prompts))
		}
	}
	return finishRecording(eng, ro, pass, len(prompts)), truth, nil
}

// finishRecording is the recording of what the engine's spy saw, with
// the header and the pass and prompt counts.
func finishRecording(eng *Engine, ro RecordOptions, passes, prompts int) *record.Recording {
	hdr := map[string]string{}
	for k, v := range ro.Header {
		hdr[k] = v
	}
	hdr["gelo.passes"] = strconv.Itoa(passes)
	hdr["gelo.prompts"] = strconv.Itoa(prompts)
	if ro.Batch > 1 {
		hdr["gelo.batch"] = strconv.Itoa(ro.Batch)
	}
	if eng.CPU != nil {
		if seed, ok := eng.CPU.PublicSeed(); ok {
			// An lwe plan's public matrix A (lwe.ExpandColumn from this
			// seed): what an outside lattice attack on the words needs.
			hdr[record.KeyLWESeed] = hex.EncodeToString(seed[:])
		}
	}
	return &record.Recording{Header: hdr, Crossings: append([]device.Crossing(nil), eng.Spy.Record()...)}
}

// recordBatched is Record over groups of ro.Batch prompts on one batch
// of that many slots (one pass counter, so the mask stream never
// repeats): each prompt prefilled into its slot, then MaxTokens - 1
// decode passes of one row per sequence (a smaller last group steps the
// first slots only), then every slot released (zeroised) for the next.
func recordBatched(eng *Engine, m *ir.Module, prompts [][]int32, ro RecordOptions) (*record.Recording, []record.PassTruth, error) {
	var truth []record.PassTruth
	pass := 0
	mark := func(t record.PassTruth) {
		t.Pass = pass
		truth = append(truth, t)
		eng.Spy.Mark(pass, t.Phase)
		pass++
	}
	bt, err := runtime.NewBatch(m, eng.Runtime, min(ro.Batch, len(prompts)), runtime.Options{MaxContext: ro.MaxContext})
	if err != nil {
		return nil, nil, err
	}
	for g := 0; g < len(prompts); g += ro.Batch {
		group := prompts[g:min(len(prompts), g+ro.Batch)]
		next := make([]int32, len(group))
		for i, prompt := range group {
			p := g + i
			if len(prompt) == 0 || len(prompt)+ro.MaxTokens > ro.MaxContext {
				return nil, nil, fmt.Errorf("record: prompt %d: %d tokens + %d new do not fit the context of %d", p, len(prompt), ro.MaxTokens, ro.MaxContext)
			}
			mark(record.PassTruth{Prompt: p, Phase: models.PhasePrefill, Pos: bt.Pos(i), Tokens: append([]int32(nil), prompt...)})
			logits, err := bt.Prefill(i, prompt)
			if err != nil {
				return nil, nil, fmt.Errorf("record: prompt %d: %w", p, err)
			}
			next[i] = int32(runtime.Argmax(logits))
		}
		for range ro.MaxTokens - 1 {
			mark(record.PassTruth{Prompt: g, Phase: models.PhaseDecode, Pos: bt.Pos(0), Tokens: append([]int32(nil), next...)})
			logits, err := bt.DecodePrefix(next)
			if err != nil {
				return nil, nil, fmt.Errorf("record: prompts %d-%d: %w", g, g+len(group)-1, err)
			}
			vocab := len(logits) / len(next)
			for i := range next {
				next[i] = int32(runtime.Argmax(logits[i*vocab : (i+1)*vocab]))
			}
		}
		for i := range bt.Size() {
			if err := bt.Release(i); err != nil {
				return nil, nil, err
			}
		}
		if ro.Progress != nil {
			ro.Progress(g+len(group), len(prompts))
		}
	}
	return finishRecording(eng, ro, pass, len(prompts)), truth, nil
}

// RecordHeader is the header a recording of m from model carries: the
// model identity and the compile options, so a reader knows what it
// attacks.
func RecordHeader(m *ir.Module, model *models.Model, opt Options) (map[string]string, error) {
	p, id, err := Seal(m, model, opt, "")
	if err != nil {
		return nil, err
	}
	d := p.Digest()
	hdr := map[string]string{
		record.KeyIdentity: id.Digest.String(),
		record.KeyPlan:     fmt.Sprintf("%x", d),
		"gelo.model":       model.Spec,
	}
	for k, v := range IdentityFlags(model.Config, p.Backend, p.Passes) {
		hdr["gelo.flag."+k] = v
	}
	if m.Meta["insecure"] != "" {
		hdr["gelo.insecure"] = m.Meta["insecure"]
	}
	return hdr, nil
}
