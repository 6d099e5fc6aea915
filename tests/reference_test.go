// Package tests holds end-to-end tests across packages: the IR path
// (trace -> passes -> lower/cpu -> runtime) against an independent
// reference forward written here with plain loops.
package tests

import (
	"math"

	"gelo/models"
)

// refModel is the reference forward: float64 arithmetic, naive loops over
// the loaded tensors, its own KV cache, and no code shared with lower/cpu.
// It is deliberately slow and obvious.
type refModel struct {
	cfg *models.Config
	w   map[string][]float32
	k   [][][]float64 // [layer][position][kv width]
	v   [][][]float64
}

func newRef(cfg *models.Config, w *models.Weights) (*refModel, error) {
	r := &refModel{cfg: cfg, w: map[string][]float32{}}
	for _, t := range cfg.TensorSpecs() {
		data, _, err := w.Get(t.Name)
		if err != nil {
			return nil, err
		}
		r.w[t.Name] = data
	}
	r.k = make([][][]float64, cfg.NumHiddenLayers)
	r.v = make([][][]float64, cfg.NumHiddenLayers)
	return r, nil
}

// linear computes W x (+ b) for W laid out [out][in].
func (r *refModel) linear(name string, x []float64, out int, bias bool) []float64 {
	w := r.w[name+".weight"]
	in := len(x)
	y := make([]float64, out)
	for o := 0; o < out; o++ {
		var s float64
		for i := 0; i < in; i++ {
			s += float64(w[o*in+i]) * x[i]
		}
		if bias {
			s += float64(r.w[name+".bias"][o])
		}
		y[o] = s
	}
	return y
}

func (r *refModel) rmsNorm(x []float64, name string) []float64 {
	w := r.w[name]
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	inv := 1 / math.Sqrt(ss/float64(len(x))+r.cfg.RMSNormEps)
	y := make([]float64, len(x))
	for i := range x {
		y[i] = x[i] * inv * float64(w[i])
	}
	return y
}

// rope rotates each head of x at position pos (HF rotate_half).
func (r *refModel) rope(x []float64, heads, pos int) {
	hd := r.cfg.HeadDimension()
	half := hd / 2
	for h := 0; h < heads; h++ {
		v := x[h*hd : (h+1)*hd]
		for i := 0; i < half; i++ {
			ang := float64(pos) * math.Pow(r.cfg.RopeTheta, -2*float64(i)/float64(hd))
			c, s := math.Cos(ang), math.Sin(ang)
			a, b := v[i], v[i+half]
			v[i] = a*c - b*s
			v[i+half] = b*c + a*s
		}
	}
}

func (r *refModel) headNorm(x []float64, heads int, name string) {
	hd := r.cfg.HeadDimension()
	for h := 0; h < heads; h++ {
		copy(x[h*hd:(h+1)*hd], r.rmsNorm(x[h*hd:(h+1)*hd], name))
	}
}

// step runs one token at position len(cache) and returns its logits.
func (r *refModel) step(tok int) []float64 {
	c := r.cfg
	d, hd := c.HiddenSize, c.HeadDimension()
	hq, hkv := c.NumAttentionHeads, c.NumKeyValueHeads
	x := make([]float64, d)
	emb := r.w[models.EmbedName]
	for i := range x {
		x[i] = float64(emb[tok*d+i])
	}
	for l := 0; l < c.NumHiddenLayers; l++ {
		p := models.LayerPrefix(l)
		pos := len(r.k[l])
		h := r.rmsNorm(x, p+"input_layernorm.weight")
		q := r.linear(p+"self_attn.q_proj", h, hq*hd, c.QKVBias())
		k := r.linear(p+"self_attn.k_proj", h, hkv*hd, c.QKVBias())
		v := r.linear(p+"self_attn.v_proj", h, hkv*hd, c.QKVBias())
		if c.QKNorm() {
			r.headNorm(q, hq, p+"self_attn.q_norm.weight")
			r.headNorm(k, hkv, p+"self_attn.k_norm.weight")
		}
		r.rope(q, hq, pos)
		r.rope(k, hkv, pos)
		r.k[l] = append(r.k[l], k)
		r.v[l] = append(r.v[l], v)
		att := make([]float64, hq*hd)
		group := hq / hkv
		for h := 0; h < hq; h++ {
			kvh := h / group
			scores := make([]float64, pos+1)
			maxS := math.Inf(-1)
			for t := 0; t <= pos; t++ {
				var s float64
				for i := 0; i < hd; i++ {
					s += q[h*hd+i] * r.k[l][t][kvh*hd+i]
				}
				scores[t] = s / math.Sqrt(float64(hd))
				maxS = math.Max(maxS, scores[t])
			}
			var sum float64
			for t := range scores {
				scores[t] = math.Exp(scores[t] - maxS)
				sum += scores[t]
			}
			for t := range scores {
				for i := 0; i < hd; i++ {
					att[h*hd+i] += scores[t] / sum * r.v[l][t][kvh*hd+i]
				}
			}
		}
		o := r.linear(p+"self_attn.o_proj", att, d, c.OBias())
		for i := range x {
			x[i] += o[i]
		}
		h = r.rmsNorm(x, p+"post_attention_layernorm.weight")
		g := r.linear(p+"mlp.gate_proj", h, c.IntermediateSize, false)
		u := r.linear(p+"mlp.up_proj", h, c.IntermediateSize, false)
		for i := range g {
			g[i] = g[i] / (1 + math.Exp(-g[i])) * u[i]
		}
		dn := r.linear(p+"mlp.down_proj", g, d, false)
		for i := range x {
			x[i] += dn[i]
		}
	}
	x = r.rmsNorm(x, models.FinalNormName)
	head := models.EmbedName
	if !c.TieWordEmbeddings {
		head = models.LMHeadName
	}
	hw := r.w[head]
	logits := make([]float64, c.VocabSize)
	for o := range logits {
		var s float64
		for i := 0; i < d; i++ {
			s += float64(hw[o*d+i]) * x[i]
		}
		logits[o] = s
	}
	return logits
}
