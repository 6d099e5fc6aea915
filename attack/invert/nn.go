// Package invert holds the seed's row-recovery attacks (section 09): NN,
// nearest-neighbour search of observed rows against a public dictionary,
// and the ridge inverter behind IMA (layer 0) and ISA (a deep layer),
// trained on a vocabulary-disjoint split. Inputs are plain *mat.Dense;
// the caller builds the dictionary and the labelled rows from recordings.
package invert

import (
	"container/heap"
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"gelo/attack/dict"
)

// blockRows is how many dictionary rows are scored at once (Obs D^T is
// never formed whole).
const blockRows = 2048

// NN returns, for every row of Obs, the ids of the k dictionary rows (D:
// V x d) with the highest cosine similarity, best first. Zero rows score
// 0 against everything. D is neither copied nor normalised in place.
func NN(Obs, D *mat.Dense, k int) ([][]int, error) {
	if Obs == nil || D == nil {
		return nil, errors.New("invert: nil input")
	}
	n, d := Obs.Dims()
	V, dd := D.Dims()
	if d != dd {
		return nil, fmt.Errorf("invert: rows have %d columns, dictionary %d", d, dd)
	}
	if k <= 0 || k > V {
		return nil, fmt.Errorf("invert: k = %d for a dictionary of %d", k, V)
	}
	on := rowNorms(Obs)
	dn := rowNorms(D)
	tops := make([]minHeap, n)
	var p mat.Dense
	for lo := 0; lo < V; lo += blockRows {
		hi := min(lo+blockRows, V)
		p.Reset()
		p.ReuseAs(n, hi-lo)
		p.Mul(Obs, D.Slice(lo, hi, 0, d).T())
		for i := 0; i < n; i++ {
			row := p.RawRowView(i)
			h := &tops[i]
			for j, c := range row {
				v := lo + j
				if on[i] > 0 && dn[v] > 0 {
					c /= on[i] * dn[v]
				} else {
					c = 0
				}
				if h.Len() < k {
					heap.Push(h, scored{v, c})
				} else if c > (*h)[0].s {
					(*h)[0] = scored{v, c}
					heap.Fix(h, 0)
				}
			}
		}
	}
	out := make([][]int, n)
	for i := range tops {
		h := &tops[i]
		ids := make([]int, h.Len())
		for j := len(ids) - 1; j >= 0; j-- {
			ids[j] = heap.Pop(h).(scored).id
		}
		out[i] = ids
	}
	return out, nil
}

// Accuracy returns the fraction of rows whose true token is first
// (top-1) and among the first five (top-5) of its NN list.
func Accuracy(top [][]int, truth []int) (top1, top5 float64, err error) {
	if len(top) != len(truth) {
		return 0, 0, fmt.Errorf("invert: %d lists for %d labels", len(top), len(truth))
	}
	if len(top) == 0 {
		return 0, 0, errors.New("invert: no rows")
	}
	for i, ids := range top {
		for j, id := range ids {
			if id == truth[i] {
				if j == 0 {
					top1++
				}
				if j < 5 {
					top5++
				}
				break
			}
		}
	}
	n := float64(len(top))
	return top1 / n, top5 / n, nil
}

func rowNorms(M *mat.Dense) []float64 {
	r, _ := M.Dims()
	out := make([]float64, r)
	for i := range out {
		row := M.RawRowView(i)
		s := 0.0
		for _, x := range row {
			s += x * x
		}
		out[i] = math.Sqrt(s)
	}
	return out
}

type scored struct {
	id int
	s  float64
}

// minHeap keeps the k best so far, worst on top; ties keep the lower id.
type minHeap []scored

func (h minHeap) Len() int { return len(h) }
func (h minHeap) Less(i, j int) bool {
	if h[i].s != h[j].s {
		return h[i].s < h[j].s
	}
	return h[i].id > h[j].id
}
func (h minHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *minHeap) Push(x any)   { *h = append(*h, x.(scored)) }
func (h *minHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// refineNN is how many float32 candidates per row NNDict re-scores in
// float64 beyond the k it returns.
const refineNN = 8

// NNDict is NN over a prepared dictionary: cosines from one float32
// product per chunk of rows, the best k + refineNN re-scored in float64,
// so the lists are NN's but for float32 misorderings deeper than that.
func NNDict(Obs *mat.Dense, T *dict.Dict, k int) ([][]int, error) {
	if Obs == nil || T == nil {
		return nil, errors.New("invert: nil input")
	}
	n, d := Obs.Dims()
	if d != T.W {
		return nil, fmt.Errorf("invert: rows have %d columns, dictionary %d", d, T.W)
	}
	if k <= 0 || k > T.V {
		return nil, fmt.Errorf("invert: k = %d for a dictionary of %d", k, T.V)
	}
	on := rowNorms(Obs)
	dn := dictNorms(T)
	out := make([][]int, n)
	err := T.Products(Obs, func(lo, hi int, y []float32) {
		for i := lo; i < hi; i++ {
			out[i] = nnRow(Obs.RawRowView(i), on[i], dn, y[(i-lo)*T.V:(i-lo+1)*T.V], T, k)
		}
	})
	return out, err
}

// NNOf is NNDict from products y = Obs D^T already at hand (n x V,
// row-major float32; approximate is fine, the best are re-scored).
func NNOf(Obs *mat.Dense, T *dict.Dict, y []float32, k int) ([][]int, error) {
	if Obs == nil || T == nil {
		return nil, errors.New("invert: nil input")
	}
	n, d := Obs.Dims()
	if d != T.W || len(y) != n*T.V {
		return nil, fmt.Errorf("invert: %d x %d rows and %d products for a dictionary of %d x %d", n, d, len(y), T.V, T.W)
	}
	if k <= 0 || k > T.V {
		return nil, fmt.Errorf("invert: k = %d for a dictionary of %d", k, T.V)
	}
	on := rowNorms(Obs)
	dn := dictNorms(T)
	out := make([][]int, n)
	for i := range out {
		out[i] = nnRow(Obs.RawRowView(i), on[i], dn, y[i*T.V:(i+1)*T.V], T, k)
	}
	return out, nil
}

func dictNorms(T *dict.Dict) []float64 {
	dn := make([]float64, T.V)
	for v := range dn {
		dn[v] = math.Sqrt(T.Norm2(v))
	}
	return dn
}

// nnRow is one row's list: the k + refineNN best by the float32 cosines
// row, re-scored exactly, the best k kept (ties: the lower id).
func nnRow(x []float64, on float64, dn []float64, row []float32, T *dict.Dict, k int) []int {
	keep := min(k+refineNN, T.V)
	var h minHeap
	for v, p := range row {
		c := 0.0
		if on > 0 && dn[v] > 0 {
			c = float64(p) / (on * dn[v])
		}
		if h.Len() < keep {
			heap.Push(&h, scored{v, c})
		} else if c > h[0].s {
			h[0] = scored{v, c}
			heap.Fix(&h, 0)
		}
	}
	for j := range h {
		c := 0.0
		if on > 0 && dn[h[j].id] > 0 {
			c = T.Dot(x, h[j].id) / (on * dn[h[j].id])
		}
		h[j].s = c
	}
	heap.Init(&h)
	for h.Len() > k {
		heap.Pop(&h)
	}
	ids := make([]int, h.Len())
	for j := len(ids) - 1; j >= 0; j-- {
		ids[j] = heap.Pop(&h).(scored).id
	}
	return ids
}
