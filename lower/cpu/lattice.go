package cpu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"gelo/device"
	"gelo/device/wire"
	"gelo/ir"
	"gelo/keystream"
	"gelo/lwe"
)

// Salts separating the lwe level's uses of the session key from each other
// and from the mask and pad streams.
const (
	latticePublicSalt = "gelo/lwe-public/v1"
	latticeVerifySalt = "gelo/lwe-hint-check/v1"
)

// HintChecks is the Freivalds repetitions a device-computed hint passes
// before it is used: a wrong hint survives one with probability at most
// 1/2 (lwe.VerifyHint), so all of them with at most 2^-40.
const HintChecks = 40

// lattice is a backend's lwe state: the public matrix A of each input
// width (expanded from a seed the session key derives, so fresh per engine
// start), each device weight's integer form and hint, and the pad counter
// of each ciphertext kind. A pad's counter only grows within a backend, so
// no (kind, counter) is drawn twice under its key.
type lattice struct {
	mu        sync.Mutex
	seed      [lwe.SeedSize]byte
	seeded    bool
	publics   map[[2]int]*lwe.Public        // by (d_in, lambda)
	weights   map[string]*latticeWeight     // by uploaded weight name and lambda
	next      map[string]uint64             // pad counters by generator name
	gens      []*lwe.PadGen                 // every generator made, for Close
	probes    map[string]*lwe.Probes        // probe vectors by weight and pool size
	padMem    int64                         // bytes of every pad buffer allocated
	pools     []*lwe.Pool                   // the decode crossings' pad pools
	poolOf    map[string]*lwe.Pool          // the same, by crossing name and rows
	poolRows  []int                         // rows each pool's crossing draws a pass
	poolGen   []func() (*lwe.PadGen, error) // a generator of each pool's shape, under a throwaway key
	stock     map[string]*lwe.Pool          // the first decode pool of each crossing shape (stockKey): short prefills draw from it
	fromStock atomic.Int64                  // pads prefills drew from stock (LatticeStockPads)
}

// LatticePadsCalibrated is what the decode crossings' pads cost the TEE
// per pass, measured apart on the cores the pass runs on: for each pool's
// shape, the median of three FillBatch calls of lwe.TiledRows pads (the
// batch a pool fills in its steady state) over the backend's workers,
// under a throwaway key, its wall time per pad times the rows the crossing
// draws a pass. The pass it is compared with runs on the same workers, so
// both are wall time on the same cores (a one-worker figure against a
// two-worker pass would count the pads twice over on two cores). Unlike
// the pools' own timing it does not count the time their workers wait for
// a core the decode holds.
func (b *Backend) LatticePadsCalibrated() (time.Duration, error) {
	lat := b.latticeState()
	lat.mu.Lock()
	gens, rows := append([]func() (*lwe.PadGen, error)(nil), lat.poolGen...), append([]int(nil), lat.poolRows...)
	lat.mu.Unlock()
	var total time.Duration
	for i, mk := range gens {
		g, err := mk()
		if err != nil {
			return 0, err
		}
		n := lwe.TiledRows(g.Params())
		pads := make([]*lwe.Pad, n)
		for k := range pads {
			pads[k] = g.New()
		}
		var runs []time.Duration
		for rep := range 3 {
			t0 := time.Now()
			err = g.FillBatch(uint64(rep*n), pads, b.ctx.Workers())
			runs = append(runs, time.Since(t0))
			if err != nil {
				break
			}
		}
		g.Forget()
		if err != nil {
			return 0, err
		}
		slices.Sort(runs)
		total += runs[1] / time.Duration(n) * time.Duration(rows[i])
	}
	return total, nil
}

// LatticeBytes is the memory the backend's lwe state holds: the public
// matrices, each weight's hint and integers, the probe vectors and the
// pad buffers of its programs (what plan.Preflight estimates).
func (b *Backend) LatticeBytes() int64 {
	lat := b.latticeState()
	lat.mu.Lock()
	defer lat.mu.Unlock()
	n := lat.padMem
	for _, a := range lat.publics {
		n += int64(a.Bytes())
	}
	for _, w := range lat.weights {
		n += int64(w.hint.Bytes()) + int64(len(w.w.Q))
	}
	for _, pr := range lat.probes {
		n += int64(pr.Bytes())
	}
	for _, pl := range lat.pools {
		n += int64(pl.Bytes())
	}
	return n
}

// latticeWeight is one device weight under the lwe level: its integers'
// norms and scales (what encode and decode read) and its hint H = W_q A.
type latticeWeight struct {
	w    *lwe.Weights
	hint *lwe.Hint
}

// latticeSlot is one crossing of a program: the encoder of its rows, the
// generator of its pads, the weights its decodes read (pad.U[i] is
// hints[i]'s), and the pads and rows of the pass in flight.
type latticeSlot struct {
	name    string
	enc     *lwe.Encoder
	gen     *lwe.PadGen
	weights []*lwe.Weights
	hintOf  map[ir.ValueID]int // decode's weight operand -> pad.U index
	buf     *padBuf            // the pads of the pass in flight (shared by the slots of one shape)
	rows    []lwe.Row
	// pool, for a decode crossing (B rows), draws the pads ahead of time
	// in bulk (lwe.Pool, one per backend, crossing and B: the programs of
	// one decode graph share it); held are the pads of the pass in
	// flight, given back by the slot's last decode (decodes of them, left
	// this pass), so a dropped program holds none. A prefill crossing of
	// few rows holds pads of its shape's stock pool the same way.
	pool          *lwe.Pool
	held          []*lwe.Pad
	heldFrom      *lwe.Pool // the pool held's pads go back to (sl.pool, or a prefill's stock)
	decodes, left int
	stockKey      string // the crossing's shape: a prefill of at most lwe.TiledRows rows takes its pads from the decode pool of this shape
}

// padBuf holds pad buffers of one shape for a program: its slots of that
// shape (every layer's q|k|v crossing, ...) run one after another, each
// decoded before the next is encoded, so they share one set of rows.
type padBuf struct {
	pads  []*lwe.Pad
	owner *latticeSlot // the slot whose pads they are now: its decodes check it
}

func (b *Backend) latticeState() *lattice {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lat == nil {
		b.lat = &lattice{publics: map[[2]int]*lwe.Public{}, weights: map[string]*latticeWeight{}, next: map[string]uint64{},
			probes: map[string]*lwe.Probes{}}
	}
	return b.lat
}

// public returns A for width in, expanding it once. Its seed is
// HKDF(session key, latticePublicSalt): public (the device is sent A's
// columns to compute hints), and fresh whenever the key is.
func (b *Backend) public(in, lambda int) (*lwe.Public, error) {
	lat := b.latticeState()
	lat.mu.Lock()
	defer lat.mu.Unlock()
	if a, ok := lat.publics[[2]int{in, lambda}]; ok {
		return a, nil
	}
	if !lat.seeded {
		if len(b.key) == 0 {
			return nil, errors.New("an lwe plan needs a session key (it keys the public matrix and the pads)")
		}
		var kdf keystream.KDF
		var s keystream.Stream
		if err := kdf.Key(&s, b.key, latticePublicSalt, nil); err != nil {
			return nil, err
		}
		for i := 0; i < lwe.SeedSize; i += 8 {
			binary.LittleEndian.PutUint64(lat.seed[i:], s.Uint64())
		}
		s.Wipe()
		kdf.Forget()
		lat.seeded = true
	}
	a, err := lwe.NewPublic(lat.seed, in, lambda)
	if err != nil {
		return nil, err
	}
	lat.publics[[2]int{in, lambda}] = a
	return a, nil
}

// PublicSeed is the seed of A this backend's lwe plans use (zero before
// the first lwe program compiles): public, for recordings and outside
// checks.
func (b *Backend) PublicSeed() ([lwe.SeedSize]byte, bool) {
	lat := b.latticeState()
	lat.mu.Lock()
	defer lat.mu.Unlock()
	return lat.seed, lat.seeded
}

// int8Upload makes an int8 weight operand resident on the device (once)
// and returns the name it was uploaded under and its rows.
func (b *Backend) int8Upload(p *Program, w ir.ValueID) (string, *wire.Matrix, error) {
	name, ok := WeightName(p.g, w)
	if !ok {
		return "", nil, fmt.Errorf("operand %v is not a named weight", w)
	}
	qm := p.q[w]
	if qm == nil || qm.Format != wire.Int8 {
		return "", nil, fmt.Errorf("weight %q is not held as int8 rows", name)
	}
	name = p.g.Node(w).Type.DType.String() + ":" + name
	if err := b.uploadOnce(name, func() error { return b.dev.UploadQ(name, qm) }); err != nil {
		return "", nil, fmt.Errorf("upload %q: %w", name, err)
	}
	return name, qm, nil
}

// latticeWeightOf returns weight w's integer form and hint under A
// (lambda columns), making them once per backend: the device computes
// H^T = (W_q A)^T by multiplying A's columns, sent as rows in chunks, and the
// TEE checks it (HintChecks Freivalds repetitions, lwe.VerifyHint) before
// any pad uses it. A device that returns a wrong hint fails the compile.
func (b *Backend) latticeWeightOf(p *Program, w ir.ValueID, lambda int) (*latticeWeight, error) {
	name, qm, err := b.int8Upload(p, w)
	if err != nil {
		return nil, err
	}
	lat := b.latticeState()
	key := fmt.Sprintf("%s@%d", name, lambda)
	lat.mu.Lock()
	lw, ok := lat.weights[key]
	lat.mu.Unlock()
	if ok {
		return lw, nil
	}
	iw, err := int8Weights(qm)
	if err != nil {
		return nil, fmt.Errorf("weight %q: %w", name, err)
	}
	a, err := b.public(qm.Cols, lambda)
	if err != nil {
		return nil, err
	}
	dev, ok := b.dev.(device.Lattice)
	if !ok {
		return nil, fmt.Errorf("the device (%T) has no lwe product (device.Lattice)", b.dev)
	}
	// In chunks of A's columns, so the TEE holds a chunk of the hint
	// twice, not all of it. (Not counted in Traffic: a load-time exchange
	// of public values, not a payload of any pass.)
	ar := make([]uint32, lwe.HintChunk(qm.Rows, lambda)*qm.Cols)
	h, err := lwe.BuildHint(qm.Rows, lambda, func(k0, k1 int, dst []uint32) error {
		a.RowsOf(k0, k1, ar)
		return dev.MatMulU32(HintOp, name, ar[:(k1-k0)*qm.Cols], k1-k0, dst)
	})
	if err != nil {
		return nil, fmt.Errorf("hint of %q: %w", name, err)
	}
	var kdf keystream.KDF
	var s keystream.Stream
	if err := kdf.Key(&s, b.key, latticeVerifySalt, []byte(key)); err != nil {
		return nil, err
	}
	err = lwe.VerifyHint(iw, a, h, &s, HintChecks)
	s.Wipe()
	kdf.Forget()
	if err != nil {
		return nil, fmt.Errorf("hint of %q computed by the device: %w", name, err)
	}
	lw = &latticeWeight{w: iw, hint: h}
	lat.mu.Lock()
	if prev, ok := lat.weights[key]; ok {
		lw = prev
	} else {
		lat.weights[key] = lw
	}
	lat.mu.Unlock()
	return lw, nil
}

// HintOp is the op name the device sees when it computes a hint: A's
// columns (public) cross as rows, and no secret does.
const HintOp = device.LatticeHintOp

// int8Weights reads a wire.Int8 matrix (rows of int8 values then a
// float32 scale) into lwe's form.
func int8Weights(qm *wire.Matrix) (*lwe.Weights, error) {
	data, err := qm.RowMajorData()
	if err != nil {
		return nil, err
	}
	rb := qm.Cols + ir.RowScaleBytes
	if len(data) != qm.Rows*rb {
		return nil, fmt.Errorf("int8 rows: %d bytes for %d rows of %d", len(data), qm.Rows, qm.Cols)
	}
	q := make([]int8, qm.Rows*qm.Cols)
	scale := make([]float32, qm.Rows)
	for j := range qm.Rows {
		row := data[j*rb : (j+1)*rb]
		for i, v := range row[:qm.Cols] {
			q[j*qm.Cols+i] = int8(v)
		}
		scale[j] = math.Float32frombits(binary.LittleEndian.Uint32(row[qm.Cols:]))
	}
	return lwe.NewWeights(q, scale, qm.Rows, qm.Cols)
}

// reserve returns the first of rows fresh pad counters of kind name.
func (lat *lattice) reserve(name string, rows int) uint64 {
	lat.mu.Lock()
	defer lat.mu.Unlock()
	n := lat.next[name]
	lat.next[name] = n + uint64(rows)
	return n
}

// forget wipes the generators' keys (Close).
func (lat *lattice) forget() {
	if lat == nil {
		return
	}
	lat.mu.Lock()
	defer lat.mu.Unlock()
	for _, g := range lat.gens {
		g.Forget()
	}
	lat.gens = nil
	for _, pr := range lat.probes {
		pr.Wipe()
	}
	lat.probes = nil
	for _, pl := range lat.pools {
		pl.Close()
	}
	lat.pools, lat.poolRows, lat.poolGen, lat.poolOf, lat.stock = nil, nil, nil, nil, nil
}

// LatticeStockPads is the pads prefills have drawn from the decode pools'
// stock (prompts of at most lwe.TiledRows rows once a decode has made its
// pools).
func (b *Backend) LatticeStockPads() int64 { return b.latticeState().fromStock.Load() }

// stockOf is the stock pool of a crossing shape, or nil.
func (lat *lattice) stockOf(key string) *lwe.Pool {
	lat.mu.Lock()
	defer lat.mu.Unlock()
	return lat.stock[key]
}

// takePoolTime is the time every pad pool's workers spent filling pads
// since the last call.
func (lat *lattice) takePoolTime() time.Duration {
	if lat == nil {
		return 0
	}
	lat.mu.Lock()
	defer lat.mu.Unlock()
	var d time.Duration
	for _, pl := range lat.pools {
		d += pl.TakeFillTime()
	}
	return d
}

// latticeSlotOf builds (once per program) the crossing of encode node n:
// the decodes of its slot name the weights it feeds, whose hints its pads
// carry.
func (b *Backend) latticeSlotOf(p *Program, n *ir.Node) (*latticeSlot, error) {
	id, _ := n.Attrs.Int("slot")
	if sl, ok := p.lslots[id]; ok {
		return sl, nil
	}
	lambda, _ := n.Attrs.Int("lambda")
	h, _ := n.Attrs.Int("h")
	delta, _ := n.Attrs.Int("delta")
	params := lwe.Params{Lambda: int(lambda), H: int(h), Delta: uint32(delta)}
	sl := &latticeSlot{name: fmt.Sprintf("%s/%d", p.g.Name, id), hintOf: map[ir.ValueID]int{}}
	var hints []*lwe.Hint
	for _, d := range p.g.Nodes {
		if s, _ := d.Attrs.Int("slot"); d.Op != ir.OpLWEDecode || s != id {
			continue
		}
		w := d.Inputs[1]
		if _, seen := sl.hintOf[w]; seen {
			sl.decodes++
			continue
		}
		lw, err := b.latticeWeightOf(p, w, params.Lambda)
		if err != nil {
			return nil, err
		}
		sl.decodes++
		sl.hintOf[w] = len(hints)
		hints = append(hints, lw.hint)
		sl.weights = append(sl.weights, lw.w)
	}
	if len(hints) == 0 {
		return nil, fmt.Errorf("slot %d is encoded but never decoded", id)
	}
	a, err := b.public(sl.weights[0].In, params.Lambda)
	if err != nil {
		return nil, err
	}
	if sl.enc, err = lwe.NewEncoder(params, sl.weights...); err != nil {
		return nil, err
	}
	if sl.gen, err = lwe.NewPadGen(params, a, hints, b.key, sl.name); err != nil {
		return nil, err
	}
	sl.stockKey = fmt.Sprintf("%+v %p", params, a)
	for _, h := range hints {
		sl.stockKey += fmt.Sprintf(" %p", h)
	}
	if r := n.Type.Shape[0]; r.IsSym() && r.Sym == "B" && !b.reusePads {
		// Decode: a pool draws the pads ahead, in batches FillBatch tiles,
		// so a step's rows wait only for their encode and decode.
		if sl.pool, err = b.decodePool(sl.name, sl.stockKey, p.dims[n.ID][0], params, a, hints); err != nil {
			return nil, err
		}
	}
	shape := fmt.Sprint(sl.weights[0].In)
	for _, h := range hints {
		shape += fmt.Sprintf(",%d", h.Out)
	}
	if sl.buf = p.padBufs[shape]; sl.buf == nil {
		sl.buf = &padBuf{}
		p.padBufs[shape] = sl.buf
	}
	lat := b.latticeState()
	lat.mu.Lock()
	lat.gens = append(lat.gens, sl.gen)
	lat.mu.Unlock()
	p.lslots[id] = sl
	return sl, nil
}

// LatticePools is the number of decode pad pools the backend holds (one
// per decode crossing and batch size, shared by the programs).
func (b *Backend) LatticePools() int {
	lat := b.latticeState()
	lat.mu.Lock()
	defer lat.mu.Unlock()
	return len(lat.pools)
}

// LatticePoolsIdle reports whether no pad pool is filling pads now (see
// lwe.Pool.Idle).
func (b *Backend) LatticePoolsIdle() bool {
	lat := b.latticeState()
	lat.mu.Lock()
	defer lat.mu.Unlock()
	for _, pl := range lat.pools {
		if !pl.Idle() {
			return false
		}
	}
	return true
}

// decodePool returns (making it once per backend) the pad pool of the
// decode crossing name at rows rows a pass: lwe.PoolSize pads, counters
// a range of their own. The first pool of a crossing shape (stockKey: the
// public matrix and hints its pads are made of) is that shape's stock,
// which short prefills draw from.
func (b *Backend) decodePool(name, stockKey string, rows int, params lwe.Params, a *lwe.Public, hints []*lwe.Hint) (*lwe.Pool, error) {
	lat := b.latticeState()
	key := fmt.Sprintf("%s@%d", name, rows)
	lat.mu.Lock()
	defer lat.mu.Unlock()
	if pl := lat.poolOf[key]; pl != nil {
		return pl, nil
	}
	n := lat.next[name]
	lat.next[name] = n + 1<<48
	pl, err := lwe.NewPool(params, a, hints, b.key, name, n, lwe.PoolSize(params, rows), 1)
	if err != nil {
		return nil, err
	}
	if lat.poolOf == nil {
		lat.poolOf = map[string]*lwe.Pool{}
	}
	lat.poolOf[key] = pl
	if lat.stock == nil {
		lat.stock = map[string]*lwe.Pool{}
	}
	if lat.stock[stockKey] == nil {
		lat.stock[stockKey] = pl
	}
	lat.pools = append(lat.pools, pl)
	lat.poolRows = append(lat.poolRows, rows)
	lat.poolGen = append(lat.poolGen, func() (*lwe.PadGen, error) {
		return lwe.NewPadGen(params, a, hints, []byte("gelo lwe pad calibration, not a key"), "calibrate")
	})
	return pl, nil
}

// lowerLWEEncode draws one fresh pad per row and writes the ciphertext
// rows: c = A s + e + Delta round(x / step).
func lowerLWEEncode(l *lowering) (func() error, error) {
	sl, err := l.b.latticeSlotOf(l.p, l.n)
	if err != nil {
		return nil, err
	}
	p, x, out := l.p, l.in[0], l.out
	rows, d := l.rows, l.dims(x)[1]
	b := l.b
	lat := b.latticeState()
	args := &encodeArgs{}
	ej := encodeJob(sl, rows, d, args) // made once: the instruction allocates nothing per run
	stockRows := lwe.TiledRows(sl.gen.Params())
	return func() error {
		if err := sl.giveBack(); err != nil { // a pass that ended early
			return err
		}
		if len(sl.rows) < rows {
			sl.rows = make([]lwe.Row, rows)
		}
		xs, c := p.f32[p.storage(x)], p.u32[out]
		// A decode crossing's pads come from its pool. So do a short
		// prompt's, from the decode pool of its crossing's shape (a pool
		// holds two batches of TiledRows, so the decode that follows keeps
		// one), once there is one: filled in bulk ahead, in counter order,
		// so the same calls give the same pads; its wait counts as pad time.
		pl, stock := sl.pool, false
		if pl == nil && rows <= stockRows && !b.reusePads {
			pl = lat.stockOf(sl.stockKey)
			stock = pl != nil
		}
		if pl != nil {
			var t0 time.Time
			if stock && b.profiling {
				t0 = time.Now()
			}
			if err := sl.take(pl, rows); err != nil {
				return err
			}
			if stock {
				lat.fromStock.Add(int64(rows))
				if b.profiling {
					b.padNanos.Add(int64(time.Since(t0)))
				}
			}
			args.pads, args.xs, args.c = sl.held, xs, c
			return ej.run(b)
		}
		for len(sl.buf.pads) < rows {
			pad := sl.gen.New()
			sl.buf.pads = append(sl.buf.pads, pad)
			lat.mu.Lock()
			lat.padMem += int64(pad.Bytes())
			lat.mu.Unlock()
		}
		sl.buf.owner = sl
		start := lat.reserve(sl.name, rows)
		var t0 time.Time
		if b.profiling {
			t0 = time.Now()
		}
		if b.reusePads {
			// The harness's insecure control (Options.ReusePads): pad 0
			// of the crossing kind for every row of every pass.
			for _, pad := range sl.buf.pads[:rows] {
				if err := sl.gen.Fill(0, pad); err != nil {
					return fmt.Errorf("lwe_encode slot %s: %w", sl.name, err)
				}
			}
		} else {
			// All rows at once: each public matrix streamed once per
			// batch (lwe.PadGen.FillBatch), the same pads as one Fill a row.
			if err := sl.gen.FillBatch(start, sl.buf.pads[:rows], b.ctx.Workers()); err != nil {
				return fmt.Errorf("lwe_encode slot %s: %w", sl.name, err)
			}
		}
		if b.profiling {
			b.padNanos.Add(int64(time.Since(t0)))
		}
		args.pads, args.xs, args.c = sl.buf.pads, xs, c
		return ej.run(b)
	}, nil
}

// lowerLWEDecode subtracts each row's H s, centres, range-checks and
// rescales the device's product.
func lowerLWEDecode(l *lowering) (func() error, error) {
	id, _ := l.n.Attrs.Int("slot")
	sl, ok := l.p.lslots[id]
	if !ok {
		return nil, fmt.Errorf("lwe_decode of slot %d before its encode", id)
	}
	w := l.in[1]
	hint, ok := sl.hintOf[w]
	if !ok {
		return nil, fmt.Errorf("lwe_decode slot %d: weight %v has no hint in its pads", id, w)
	}
	iw := sl.weights[hint]
	p, y, out, rows, dout := l.p, l.in[0], l.out, l.rows, l.dims(l.out)[1]
	if dout != iw.Out {
		return nil, fmt.Errorf("lwe_decode slot %d: %d outputs, the weight has %d rows", id, dout, iw.Out)
	}
	b := l.b
	vs := make([][]int32, b.ctx.Workers())
	for i := range vs {
		vs[i] = make([]int32, dout)
	}
	var pads []*lwe.Pad // this run's, read by dj
	dj := &rowJob{rows: rows, do: func(r, w int) error {
		v := vs[w]
		err := lwe.Decode(iw, sl.rows[r], p.u32[p.storage(y)][r*dout:(r+1)*dout], pads[r], hint, v, p.f32[out][r*dout:(r+1)*dout])
		clear(v)
		if err != nil {
			if errors.Is(err, lwe.ErrRange) {
				b.abort() // the device's result is not W_q c: as a failed probe
				return ErrIntegrity
			}
			return fmt.Errorf("lwe_decode slot %s row %d: %w", sl.name, r, err)
		}
		return nil
	}}
	return func() error {
		pads = sl.held
		if sl.heldFrom == nil { // this pass's pads are the program's buffers
			if sl.buf.owner != sl {
				return fmt.Errorf("lwe_decode slot %s: its pads were taken by another crossing before it was decoded", sl.name)
			}
			pads = sl.buf.pads
		}
		if err := dj.run(b); err != nil {
			return err
		}
		if sl.heldFrom != nil {
			if sl.left--; sl.left == 0 {
				return sl.giveBack()
			}
		}
		return nil
	}, nil
}

// take draws rows pads from pl, in counter order, into held: they go back
// to pl after the slot's last decode of the pass (giveBack).
func (sl *latticeSlot) take(pl *lwe.Pool, rows int) error {
	sl.left, sl.heldFrom = sl.decodes, pl
	for range rows {
		pad, err := pl.Get()
		if err != nil {
			return fmt.Errorf("lwe_encode slot %s: %w", sl.name, err)
		}
		sl.held = append(sl.held, pad)
	}
	return nil
}

// giveBack returns the slot's held pads to the pool they came from
// (wiped by Put).
func (sl *latticeSlot) giveBack() error {
	for _, pad := range sl.held {
		if err := sl.heldFrom.Put(pad); err != nil {
			return err
		}
	}
	sl.held, sl.heldFrom = sl.held[:0], nil
	return nil
}

// encodeArgs are what one run of an encode reads: the rows' filled pads,
// the rows and the ciphertext buffer.
type encodeArgs struct {
	pads []*lwe.Pad
	xs   []float32
	c    []uint32
}

// encodeJob encodes rows of width d with a's pads, the rows split over the
// backend's workers (each row's encode reads only its own row and pad).
func encodeJob(sl *latticeSlot, rows, d int, a *encodeArgs) *rowJob {
	return &rowJob{rows: rows, do: func(r, _ int) error {
		row, err := sl.enc.Encode(a.xs[r*d:(r+1)*d], a.pads[r], a.c[r*d:(r+1)*d])
		if err != nil {
			return fmt.Errorf("lwe_encode slot %s row %d: %w", sl.name, r, err)
		}
		sl.rows[r] = row
		return nil
	}}
}

// rowJob runs do for every row on the backend's pool, in chunks of rows,
// keeping the first error.
type rowJob struct {
	rows, per int
	do        func(row, worker int) error
	mu        sync.Mutex
	err       error
}

func (j *rowJob) run(b *Backend) error {
	j.err = nil
	w := b.ctx.Workers()
	if j.rows <= 1 || w <= 1 {
		for r := range j.rows {
			if err := j.do(r, 0); err != nil {
				return err
			}
		}
		return nil
	}
	tasks := min(j.rows, 4*w)
	j.per = (j.rows + tasks - 1) / tasks
	b.ctx.Pool().Run(j, (j.rows+j.per-1)/j.per)
	return j.err
}

// Do is pool.Job's: task t's rows.
func (j *rowJob) Do(task, worker int) {
	for r := task * j.per; r < min(j.rows, (task+1)*j.per); r++ {
		if err := j.do(r, worker); err != nil {
			j.mu.Lock()
			if j.err == nil {
				j.err = err
			}
			j.mu.Unlock()
			return
		}
	}
}

// lowerLatticeDevice sends the ciphertext rows of a u32 x int8 product to
// the device.
func (b *Backend) lowerLatticeDevice(p *Program, n *ir.Node) (func() error, error) {
	name, qm, err := b.int8Upload(p, n.Inputs[1])
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", n.Op, err)
	}
	dev, ok := b.dev.(device.Lattice)
	if !ok {
		return nil, fmt.Errorf("device %s: the device (%T) has no lwe product (device.Lattice)", n.Op, b.dev)
	}
	x, out, rows, tr := n.Inputs[0], n.ID, p.dims[n.ID][0], b.traffic
	wr, wc := qm.Rows, qm.Cols
	return func() error {
		tr.add(rows, 4*rows*wc, 4*rows*wr)
		return dev.MatMulU32(n.Op, name, p.u32[p.storage(x)][:rows*wc], rows, p.u32[out][:rows*wr])
	}, nil
}

// lowerLatticeProbe checks a u32 product against its ciphertext rows with
// k of the weight's pool of secret vectors, drawn per pass by the
// program's picker (lwe.Probes: Freivalds modulo 2^32, exact). A failure
// ends the session, as a float probe's does.
func lowerLatticeProbe(l *lowering) (func() error, error) {
	p, n, in, rows, b := l.p, l.n, l.in, l.rows, l.b
	k, _ := n.Attrs.Int("k")
	size, _ := n.Attrs.Int("pool")
	name, qm, err := b.int8Upload(p, in[2])
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	key := fmt.Sprintf("%s#%d", name, size)
	lat := b.latticeState()
	lat.mu.Lock()
	pr, ok := lat.probes[key]
	lat.mu.Unlock()
	if !ok {
		iw, err := int8Weights(qm)
		if err != nil {
			return nil, fmt.Errorf("probe %q: %w", name, err)
		}
		if len(b.key) == 0 {
			return nil, errors.New("probe: the graph checks device results but the backend has no session key")
		}
		if pr, err = lwe.NewProbes(iw, b.key, key, int(size)); err != nil {
			return nil, err
		}
		lat.mu.Lock()
		if prev, ok := lat.probes[key]; ok {
			pr = prev
		} else {
			lat.probes[key] = pr
		}
		lat.mu.Unlock()
	}
	p.probes = true
	y, c := in[0], in[1]
	return func() error {
		idx := p.picker.Pick(int(k), pr.Size())
		err := pr.Check(p.u32[p.storage(y)], p.u32[p.storage(c)], rows, idx)
		b.probeStats.record(0)
		if err != nil {
			b.abort()
			return ErrIntegrity
		}
		return nil
	}, nil
}
