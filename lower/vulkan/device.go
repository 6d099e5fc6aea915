//go:build cgo

package vulkan

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"gelo/device"
	"gelo/device/wire"
)

var (
	_ device.Device  = (*Device)(nil)
	_ device.Lattice = (*Device)(nil)
)

// Bindings of every matmul shader (shaders/common.glsl).
const (
	bindParams = iota
	bindWeight
	bindX
	bindXScale
	bindY
	numBindings
)

// Device runs device-placed matmuls on one Vulkan device: f32, bf16 and
// int8 weights by f32 rows (MatMul), q8_0 and q4_0 by q8_0 rows (MatMulQ),
// and int8 by the lwe level's uint32 ciphertext rows mod 2^32 (MatMulU32).
// It is safe for concurrent use; calls are serialized (one set of crossing
// buffers).
type Device struct {
	mu     sync.Mutex
	c      *ctx
	opt    Options
	dsl    setLayout
	pl     pipeLayout
	pipes  [numKinds][numFormats]pipeline
	params *buffer // host-visible: the row count of the call in flight
	// The crossing buffers the shaders bind (x: operand rows or q8_0
	// quants, xd: q8_0 scales, y: products), and their host staging twins
	// when they are not mapped.
	x, xd, y    *buffer
	xs, xds, ys *buffer
	weights     map[string]*weight
	stats       Stats
	cpuKernels  bool // the lane-per-row shader for every call
	closed      bool
}

// weight is one resident weight: its parts (row ranges, one buffer and one
// descriptor set each) and its recorded crossings, one per shader format
// and row bucket.
type weight struct {
	name       string
	format     int
	rows, cols int
	chunk      int // most activation rows one submit takes
	parts      []part
	pool       descPool
	cmds       map[recKey]cmdBuffer
	dispatches map[recKey]int
}

// recKey names one recorded crossing of a weight: the shader format it
// runs (the weight's, or fmtU32 for an int8 weight's MatMulU32) and its
// row bucket.
type recKey struct{ format, rows int }

type part struct {
	buf      *buffer
	r0, rows int
	set      descSet
}

// New opens a Vulkan device, makes its pipelines and crossing buffers:
// everything a plan's crossings use except the weights, which Upload adds.
func New(opt Options) (*Device, error) {
	c, err := openCtx(opt.DeviceIndex, opt.Validation)
	if err != nil {
		return nil, err
	}
	d := &Device{c: c, opt: opt, weights: map[string]*weight{}}
	if err := d.init(); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

func (d *Device) init() error {
	c := d.c
	if c.info.MaxPushBytes < 16 {
		return fmt.Errorf("vulkan: %s allows %d push-constant bytes, need 16", c.info.Name, c.info.MaxPushBytes)
	}
	var err error
	if d.dsl, d.pl, err = c.layout(numBindings, 16); err != nil {
		return err
	}
	switch d.opt.Kernels {
	case "":
		d.cpuKernels = c.info.Type == "cpu"
	case "cpu", "gpu":
		d.cpuKernels = d.opt.Kernels == "cpu"
	default:
		return fmt.Errorf("vulkan: kernels %q: want \"\", cpu or gpu", d.opt.Kernels)
	}
	for k := range numKinds {
		for f := range numFormats {
			if !hasShader(k, f) {
				continue
			}
			spv, err := spirv(k, f)
			if err != nil {
				return err
			}
			if d.pipes[k][f], err = c.pipeline(d.pl, spv); err != nil {
				return fmt.Errorf("%s_%s: %w", kindNames[k], formatNames[f], err)
			}
		}
	}
	io := d.opt.IOBytes
	if io <= 0 {
		io = 64 << 20
	}
	io = min(io, c.info.MaxStorageRange) &^ 3
	if io < 1024 {
		return fmt.Errorf("vulkan: crossing buffers of %d bytes are too small", io)
	}
	d.opt.IOBytes = io
	if d.params, err = c.newBuffer(16, memHost); err != nil {
		return err
	}
	if d.params.mapped() == nil {
		return fmt.Errorf("vulkan: %s has no host-visible coherent memory for the row count", c.info.Name)
	}
	mem := memDevice
	if d.opt.Staging {
		mem = memDeviceOnly
	}
	for _, b := range []struct {
		dev, host **buffer
		size      int64
	}{{&d.x, &d.xs, io}, {&d.xd, &d.xds, io / 8}, {&d.y, &d.ys, io}} {
		if *b.dev, err = c.newBuffer(b.size, mem); err != nil {
			return err
		}
		if (*b.dev).mapped() == nil {
			if *b.host, err = c.newBuffer(b.size, memHost); err != nil {
				return err
			}
			if (*b.host).mapped() == nil {
				return fmt.Errorf("vulkan: %s has no host-visible coherent memory for staging", c.info.Name)
			}
		}
	}
	return nil
}

// Info describes the device (also after Close).
func (d *Device) Info() Info { return d.c.info }

// Stats returns the counters so far.
func (d *Device) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// ValidationErrors returns the validation layer's error count and latest
// messages (0 and "" when the layer is off).
func (d *Device) ValidationErrors() (int, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || d.c == nil {
		return 0, ""
	}
	return d.c.validationErrors()
}

// Close releases every Vulkan object; the device is unusable afterwards.
func (d *Device) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || d.c == nil {
		return
	}
	d.closed = true
	c := d.c
	for _, w := range d.weights {
		d.freeWeight(w)
	}
	for _, b := range []*buffer{d.params, d.x, d.xd, d.y, d.xs, d.xds, d.ys} {
		c.freeBuffer(b)
	}
	for k := range d.pipes {
		for _, p := range d.pipes[k] {
			c.destroyPipeline(p)
		}
	}
	c.destroyLayout(d.dsl, d.pl)
	c.close()
}

func (d *Device) freeWeight(w *weight) {
	for _, cb := range w.cmds {
		d.c.freeCmd(cb)
	}
	for _, p := range w.parts {
		d.c.freeBuffer(p.buf)
	}
	d.c.destroyPool(w.pool)
}

// rowBytes is the stored size of one weight row in each format (bf16
// rows are padded to whole 32-bit words; an int8 row is its values padded
// to whole words, then its float32 scale: I8_WORDS in common.glsl).
func rowBytes(format, cols int) int64 {
	switch format {
	case fmtF32:
		return 4 * int64(cols)
	case fmtBF16:
		return 4 * int64((cols+1)/2)
	case fmtI8:
		return 4 * int64((cols+3)/4+1)
	case fmtQ8:
		return int64(cols / wire.QK * wire.BlockBytesQ8_0)
	}
	return int64(cols / wire.QK * wire.BlockBytesQ4_0)
}

// Upload makes an f32 weight resident.
func (d *Device) Upload(name string, w []float32, rows, cols int) error {
	if rows <= 0 || cols <= 0 || len(w) != rows*cols {
		return fmt.Errorf("vulkan upload %q: %d values for shape [%d, %d]", name, len(w), rows, cols)
	}
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 4*len(w))
	return d.upload(name, fmtF32, rows, cols, func(r0, n int) []byte { return raw[4*r0*cols : 4*(r0+n)*cols] })
}

// UploadBF16 makes a bf16 weight resident, two weights a 32-bit word (a
// row of odd length gets a zero pad).
func (d *Device) UploadBF16(name string, w []uint16, rows, cols int) error {
	if rows <= 0 || cols <= 0 || len(w) != rows*cols {
		return fmt.Errorf("vulkan upload %q: %d bf16 values for shape [%d, %d]", name, len(w), rows, cols)
	}
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 2*len(w))
	return d.upload(name, fmtBF16, rows, cols, func(r0, n int) []byte {
		if cols%2 == 0 {
			return raw[2*r0*cols : 2*(r0+n)*cols]
		}
		rb := int(rowBytes(fmtBF16, cols))
		out := make([]byte, n*rb)
		for r := range n {
			copy(out[r*rb:], raw[2*(r0+r)*cols:2*(r0+r+1)*cols])
		}
		return out
	})
}

// UploadQ makes a q8_0 or q4_0 weight resident as its GGUF blocks, or an
// int8 one (wire.Int8: MatMul multiplies it by f32 rows, MatMulU32 by
// ciphertext rows) as its rows with the values padded to whole words.
func (d *Device) UploadQ(name string, m *wire.Matrix) error {
	if err := m.Validate(); err != nil {
		return fmt.Errorf("vulkan upload %q: %w", name, err)
	}
	var f int
	switch m.Format {
	case wire.Q8_0:
		f = fmtQ8
	case wire.Q4_0:
		f = fmtQ4
	case wire.Int8:
		f = fmtI8
	default:
		return fmt.Errorf("vulkan upload %q: format %v has no shader", name, m.Format)
	}
	data, err := m.RowMajorData() // the shaders read GGUF's row-major blocks
	if err != nil {
		return fmt.Errorf("vulkan upload %q: %w", name, err)
	}
	rb := m.RowBytes()
	if f == fmtI8 {
		return d.upload(name, f, m.Rows, m.Cols, func(r0, n int) []byte { return padInt8(data[r0*rb:(r0+n)*rb], m.Cols) })
	}
	return d.upload(name, f, m.Rows, m.Cols, func(r0, n int) []byte { return data[r0*rb : (r0+n)*rb] })
}

// padInt8 returns wire.Int8 rows of cols values in the layout the shaders
// read (rowBytes): each row's values, zeros up to a whole word, its scale.
// The zero padding multiplies nothing: the shaders stop at cols.
func padInt8(rows []byte, cols int) []byte {
	rb := cols + 4
	n := len(rows) / rb
	out := make([]byte, n*int(rowBytes(fmtI8, cols)))
	stored := len(out) / n
	for r := range n {
		src, dst := rows[r*rb:(r+1)*rb], out[r*stored:(r+1)*stored]
		copy(dst, src[:cols])
		copy(dst[stored-4:], src[cols:])
	}
	return out
}

// upload splits the weight into parts under the binding cap, writes each
// part's rows (rowsOf(r0, n) returns their stored bytes) into its buffer
// and makes its descriptor set. Uploading a name again replaces it.
func (d *Device) upload(name string, format, rows, cols int, rowsOf func(r0, n int) []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("vulkan upload %q: device closed", name)
	}
	c := d.c
	rb := rowBytes(format, cols)
	capBytes := c.info.MaxStorageRange
	if d.opt.PartBytes > 0 {
		capBytes = min(capBytes, d.opt.PartBytes)
	}
	perPart := int(capBytes / rb)
	perPart = min(perPart, 16*c.info.MaxGroupCount[0], rows)
	if perPart < 1 {
		return fmt.Errorf("vulkan upload %q: a row of %d bytes exceeds the %d-byte binding cap", name, rb, capBytes)
	}
	// Activation rows per submit: x, its scales and y must fit the
	// crossing buffers; the tiled shader's y groups bound it too.
	xRow := int64(4 * cols) // f32 values or uint32 words
	if quantized(format) {
		xRow = int64(cols)
	}
	chunk := int(min(d.opt.IOBytes/xRow, d.opt.IOBytes/(4*int64(rows)), int64(16*c.info.MaxGroupCount[1]),
		int64(matVecRows*c.info.MaxGroupCount[2])))
	if chunk < 1 {
		return fmt.Errorf("vulkan upload %q: one row of [%d, %d] exceeds the %d-byte crossing buffers", name, rows, cols, d.opt.IOBytes)
	}
	nparts := (rows + perPart - 1) / perPart
	w := &weight{name: name, format: format, rows: rows, cols: cols, chunk: chunk,
		cmds: map[recKey]cmdBuffer{}, dispatches: map[recKey]int{}}
	var err error
	if w.pool, err = c.pool(nparts, nparts*numBindings); err != nil {
		return fmt.Errorf("vulkan upload %q: %w", name, err)
	}
	mem := memDevice
	if d.opt.Staging {
		mem = memDeviceOnly
	}
	for r0 := 0; r0 < rows; r0 += perPart {
		n := min(perPart, rows-r0)
		p := part{r0: r0, rows: n}
		if p.buf, err = c.newBuffer(int64(n)*rb, mem); err != nil {
			d.freeWeight(w)
			return fmt.Errorf("vulkan upload %q: %w", name, err)
		}
		w.parts = append(w.parts, p)
		if err = c.upload(p.buf, 0, rowsOf(r0, n)); err != nil {
			d.freeWeight(w)
			return fmt.Errorf("vulkan upload %q: %w", name, err)
		}
		bs := []binding{
			{d.params, 0, d.params.size()},
			{p.buf, 0, p.buf.size()},
			{d.x, 0, d.x.size()},
			{d.xd, 0, d.xd.size()},
			{d.y, 0, d.y.size()},
		}
		if w.parts[len(w.parts)-1].set, err = c.set(w.pool, d.dsl, bs); err != nil {
			d.freeWeight(w)
			return fmt.Errorf("vulkan upload %q: %w", name, err)
		}
	}
	if old := d.weights[name]; old != nil {
		d.stats.WeightBytes -= int64(old.rows) * rowBytes(old.format, old.cols)
		d.freeWeight(old)
	}
	d.weights[name] = w
	d.stats.WeightBytes += int64(rows) * rb
	return nil
}

// bucket returns the recorded row count that serves n rows: the next
// power of two, at most the weight's chunk.
func (w *weight) bucket(n int) int {
	if n <= 1 {
		return 1
	}
	return min(1<<bits.Len(uint(n-1)), w.chunk)
}

// record makes the command buffer of w's crossings k (a shader format and
// a bucket of k.rows rows): staging copies in, one dispatch per part,
// staging copy out. Nothing in it depends on the call's actual row count,
// which the shaders read from the params buffer.
func (d *Device) record(w *weight, k recKey) (cmdBuffer, error) {
	c := d.c
	cb, err := c.begin()
	if err != nil {
		return nil, err
	}
	b := k.rows
	quant := quantized(k.format)
	xBytes := int64(b) * int64(4*w.cols)
	if quant {
		xBytes = int64(b) * int64(w.cols)
	}
	if d.xs != nil {
		c.copyBuffer(cb, d.xs, d.x, xBytes)
		if quant {
			c.copyBuffer(cb, d.xds, d.xd, xBytes/wire.QK*4)
		}
	}
	c.barrier(cb)
	kind := d.kind(k.format, b)
	n := 0
	for _, p := range w.parts {
		push := [4]uint32{uint32(p.rows), uint32(w.cols), uint32(p.r0), uint32(w.rows)}
		var groups, gy, gz int
		switch kind {
		case kindTiled:
			groups, gy, gz = (p.rows+15)/16, (b+15)/16, 1
		case kindRows:
			groups, gz = (p.rows+63)/64, (b+matVecRows-1)/matVecRows
		default:
			per := max(1, 64/c.info.SubgroupSize)
			groups, gz = (p.rows+per-1)/per, 1
		}
		gx := groups
		if kind != kindTiled {
			// The mat-vec and lane-per-row shaders stride over their
			// rows, so any grid covers them: fold the groups into two
			// dimensions.
			gx = min(groups, c.info.MaxGroupCount[0])
			gy = min((groups+gx-1)/gx, c.info.MaxGroupCount[1])
		}
		c.dispatch(cb, d.pipes[kind][k.format], d.pl, p.set, &push, gx, gy, gz)
		n++
	}
	c.barrier(cb)
	if d.ys != nil {
		c.copyBuffer(cb, d.y, d.ys, int64(b)*int64(4*w.rows))
		c.barrier(cb)
	}
	if err := c.end(cb); err != nil {
		c.freeCmd(cb)
		return nil, err
	}
	d.stats.Recordings++
	w.dispatches[k] = n
	return cb, nil
}

// kind picks the shader for b rows of a shader format.
func (d *Device) kind(format, b int) int {
	switch {
	case d.cpuKernels:
		return kindRows
	case b > matVecRows:
		return kindTiled
	case !hasShader(kindMatVec, format):
		return kindRows
	}
	return kindMatVec
}

// crossing replays w's recording in shader format f for n rows: the row
// count into params, the operand into the crossing buffers, submit, the
// product (4 bytes a value, n x w.rows) out into y.
func (d *Device) crossing(w *weight, f, n int, x, xd, y []byte) error {
	k := recKey{f, w.bucket(n)}
	cb, ok := w.cmds[k]
	if !ok {
		var err error
		if cb, err = d.record(w, k); err != nil {
			return err
		}
		w.cmds[k] = cb
	}
	*(*uint32)(unsafe.Pointer(&d.params.mapped()[0])) = uint32(n)
	xin, xdin := d.x, d.xd
	if d.xs != nil {
		xin, xdin = d.xs, d.xds
	}
	copy(xin.mapped(), x)
	if xd != nil {
		copy(xdin.mapped(), xd)
	}
	if err := d.c.submit(cb); err != nil {
		return err
	}
	out := d.y
	if d.ys != nil {
		out = d.ys
	}
	copy(y[:4*n*w.rows], out.mapped())
	d.stats.Submits++
	d.stats.Dispatches += int64(w.dispatches[k])
	d.stats.BytesIn += int64(len(x) + len(xd))
	d.stats.BytesOut += int64(4 * n * w.rows)
	return nil
}

// lookup returns the resident weight name if its format is one of takes
// (the weight formats the calling product multiplies).
func (d *Device) lookup(op, name, call string, takes ...int) (*weight, error) {
	if d.closed {
		return nil, fmt.Errorf("vulkan %s %q: device closed", op, name)
	}
	w, ok := d.weights[name]
	if !ok {
		return nil, fmt.Errorf("vulkan %s: weight %q was never uploaded", op, name)
	}
	if !slices.Contains(takes, w.format) {
		names := make([]string, len(takes))
		for i, f := range takes {
			names[i] = formatNames[f]
		}
		return nil, fmt.Errorf("vulkan %s: weight %q is %s; %s multiplies %s weights", op, name, formatNames[w.format], call, strings.Join(names, ", "))
	}
	return w, nil
}

// MatMul computes y[m, rows] = x[m, cols] W^T for a resident f32, bf16 or
// int8 weight, in chunks of the weight's crossing capacity. An int8
// weight's product is the Go int8 kernel's (kernels.MatMulTInt8) bit for
// bit: its order of float32 operations, each rounded once.
func (d *Device) MatMul(op, name string, x []float32, m int, y []float32) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	w, err := d.lookup(op, name, "MatMul", fmtF32, fmtBF16, fmtI8)
	if err != nil {
		return err
	}
	if m <= 0 || len(x) != m*w.cols || len(y) != m*w.rows {
		return fmt.Errorf("vulkan %s %q: x holds %d values and y %d, want %d x %d and %d x %d",
			op, name, len(x), len(y), m, w.cols, m, w.rows)
	}
	d.stats.Calls++
	xb := unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*len(x))
	for i0 := 0; i0 < m; i0 += w.chunk {
		n := min(w.chunk, m-i0)
		if err := d.crossing(w, w.format, n, xb[4*i0*w.cols:4*(i0+n)*w.cols], nil, f32Bytes(y[i0*w.rows:(i0+n)*w.rows])); err != nil {
			return fmt.Errorf("vulkan %s %q: %w", op, name, err)
		}
	}
	return nil
}

// MatMulQ multiplies q8_0 activation rows by a resident q8_0 or q4_0
// weight.
func (d *Device) MatMulQ(op, name string, a *wire.Activations, y []float32) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	w, err := d.lookup(op, name, "MatMulQ", fmtQ8, fmtQ4)
	if err != nil {
		return err
	}
	if a == nil || a.Rows() <= 0 {
		return fmt.Errorf("vulkan %s %q: empty activations", op, name)
	}
	m, k := a.Rows(), a.Cols()
	if k != w.cols || len(y) < m*w.rows {
		return fmt.Errorf("vulkan %s %q: activations [%d, %d] and %d outputs for a [%d, %d] weight",
			op, name, m, k, len(y), w.rows, w.cols)
	}
	d.stats.Calls++
	q, s := a.Quants(), a.Scales()
	qb := unsafe.Slice((*byte)(unsafe.Pointer(&q[0])), len(q))
	sb := unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 4*len(s))
	nb := k / wire.QK
	for i0 := 0; i0 < m; i0 += w.chunk {
		n := min(w.chunk, m-i0)
		err := d.crossing(w, w.format, n, qb[i0*k:(i0+n)*k], sb[4*i0*nb:4*(i0+n)*nb], f32Bytes(y[i0*w.rows:(i0+n)*w.rows]))
		if err != nil {
			return fmt.Errorf("vulkan %s %q: %w", op, name, err)
		}
	}
	return nil
}

// MatMulU32 is the lwe level's product (device.Lattice): m ciphertext rows
// c [m, cols] of uint32 words by a resident int8 weight (wire.Int8,
// uploaded with UploadQ) modulo 2^32, y[r, j] = sum_i int32(W_q[j, i]) *
// c[r, i] mod 2^32, the row scales not read. The sum is exact in the ring,
// so y is lwe.MulRef's word for word (any row bucket, part or shader).
func (d *Device) MatMulU32(op, name string, c []uint32, m int, y []uint32) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	w, err := d.lookup(op, name, "MatMulU32", fmtI8)
	if err != nil {
		return err
	}
	if m <= 0 || len(c) != m*w.cols || len(y) != m*w.rows {
		return fmt.Errorf("vulkan %s %q: c holds %d words and y %d, want %d x %d and %d x %d",
			op, name, len(c), len(y), m, w.cols, m, w.rows)
	}
	d.stats.Calls++
	cb := unsafe.Slice((*byte)(unsafe.Pointer(&c[0])), 4*len(c))
	yb := unsafe.Slice((*byte)(unsafe.Pointer(&y[0])), 4*len(y))
	for i0 := 0; i0 < m; i0 += w.chunk {
		n := min(w.chunk, m-i0)
		if err := d.crossing(w, fmtU32, n, cb[4*i0*w.cols:4*(i0+n)*w.cols], nil, yb[4*i0*w.rows:4*(i0+n)*w.rows]); err != nil {
			return fmt.Errorf("vulkan %s %q: %w", op, name, err)
		}
	}
	return nil
}

// f32Bytes views float32 products as the bytes crossing copies them into.
func f32Bytes(y []float32) []byte {
	if len(y) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&y[0])), 4*len(y))
}
