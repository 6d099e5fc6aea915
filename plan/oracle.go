package plan

import (
	"fmt"
	"strings"

	"gelo/device"
	"gelo/ir"
	"gelo/models"
	"gelo/passes"
	"gelo/runtime"
)

// Oracle is the attacker's copy of the public model: for a prefix and a
// list of candidate next tokens it returns the plaintext row each
// candidate puts into the first device-bound payload whose weight starts
// with weightPrefix (the deep crossing an attack watches). It runs the
// unprotected plan on its own engine, batch rows at a time. Close
// releases it.
type Oracle struct {
	m      *ir.Module
	eng    *Engine
	prefix string
	batch  int
	maxT   int
}

// NewOracle compiles model's config unprotected for the oracle, in weight
// format weights (the attacked plans' own: the attacker knows the public
// format, and its rows must be those the plans compute; "" is f32).
func NewOracle(model *models.Model, eo EngineOptions, weights, weightPrefix string, batch, maxContext int) (*Oracle, error) {
	o := Level(passes.LevelNone)
	o.Mask = passes.MaskNone
	o.Weights = weights
	m, err := Compile(models.Source{}, model.Config, o, nil)
	if err != nil {
		return nil, err
	}
	if batch <= 0 {
		batch = 32
	}
	eo.Spy = true
	eng, err := NewEngine(eo, model.Weights, []byte("gelo attack oracle (mask none)"), m)
	if err != nil {
		return nil, err
	}
	return &Oracle{m: m, eng: eng, prefix: weightPrefix, batch: batch, maxT: maxContext}, nil
}

// Close releases the oracle's engine.
func (o *Oracle) Close() { o.eng.Close() }

// Rows returns, for each candidate c, the row of prefix+c at the watched
// crossing.
func (o *Oracle) Rows(prefix, cands []int32) ([][]float32, error) {
	if len(prefix) == 0 || len(prefix)+2 > o.maxT {
		return nil, fmt.Errorf("oracle: prefix of %d tokens for a context of %d", len(prefix), o.maxT)
	}
	out := make([][]float32, 0, len(cands))
	for start := 0; start < len(cands); start += o.batch {
		chunk := cands[start:min(len(cands), start+o.batch)]
		rows, err := o.rows(prefix, chunk)
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	return out, nil
}

func (o *Oracle) rows(prefix, chunk []int32) ([][]float32, error) {
	eng := o.eng
	bt, err := runtime.NewBatch(o.m, eng.Runtime, len(chunk), runtime.Options{MaxContext: o.maxT})
	if err != nil {
		return nil, err
	}
	for i := range chunk {
		if _, err := bt.Prefill(i, prefix); err != nil {
			return nil, err
		}
	}
	mark := eng.Spy.Len()
	if _, err := bt.Decode(chunk); err != nil {
		return nil, err
	}
	for _, c := range eng.Spy.Record()[mark:] {
		if c.Dir == device.ToDevice && strings.HasPrefix(device.WeightName(c.Weight), o.prefix) {
			if c.Rows != len(chunk) {
				return nil, fmt.Errorf("oracle: crossing %s has %d rows for %d candidates", c.Weight, c.Rows, len(chunk))
			}
			rows := make([][]float32, len(chunk))
			for i := range rows {
				rows[i] = c.Data[i*c.Cols : (i+1)*c.Cols]
			}
			eng.Spy.Reset()
			return rows, nil
		}
	}
	return nil, fmt.Errorf("oracle: no device-bound payload on a weight starting %q", o.prefix)
}
