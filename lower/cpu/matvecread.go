package cpu

import (
	"time"
	"unsafe"

	"gelo/ir"
)

// isTEEMatVec reports whether n is a TEE matmul (or LM head) of one
// activation row: a decode step's. A device-placed one reads the device's
// memory, not the TEE's.
func isTEEMatVec(p *Program, n *ir.Node) bool {
	return n.Place != ir.Device && (n.Op == ir.OpMatMul || n.Op == ir.OpLMHead) && p.dims[n.ID][0] == 1
}

// matvecBytes returns the bytes of the weight the one-row matmul n reads:
// its blocks, its bf16 values or its f32 rows, the buffer its product
// reads.
func (p *Program) matvecBytes(n *ir.Node) []byte {
	wv := n.Inputs[1]
	k, nOut := p.dims[n.Inputs[0]][1], p.dims[wv][0]
	switch {
	case p.q[wv] != nil:
		return p.q[wv].Data
	case p.b16[wv] != nil:
		return byteView(p.b16[wv][:k*nOut])
	case p.f32[p.storage(wv)] != nil:
		return byteView(p.f32[p.storage(wv)][:k*nOut])
	}
	return nil
}

func byteView[T uint16 | float32](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(z)))
}

// ReadMatVecWeights reads, bare, the weights of the one-row TEE matmuls
// of the live programs compiled so far from the graph named graph (the
// decode graph: a protected prefill has one-row TEE products too, its
// centred crossings' mean rows), in program order, each buffer once (the
// programs of several KV buckets share them): what a B = 1 decode step's
// matmuls stream, with none of their arithmetic or waits
// (kernels.Ctx.ReadBuffers). It returns the bytes read and the time that
// took: a benchmark runs it between decode steps, for a bound measured at
// the same moment as the steps.
func (b *Backend) ReadMatVecWeights(graph string) (int, time.Duration) {
	b.mu.Lock()
	progs := b.matvecProgs
	b.mu.Unlock()
	var bufs [][]byte
	seen := map[*byte]bool{}
	for _, wp := range progs {
		p := wp.Value()
		if p == nil || p.g.Name != graph {
			continue
		}
		for _, n := range p.matvecs {
			buf := p.matvecBytes(n)
			if len(buf) == 0 || seen[&buf[0]] {
				continue
			}
			seen[&buf[0]] = true
			bufs = append(bufs, buf)
		}
	}
	t0 := time.Now()
	n := b.ctx.ReadBuffers(bufs)
	return n, time.Since(t0)
}
