package device

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"gelo/device/wire"
)

var (
	_ Device  = (*LiarDevice)(nil)
	_ Lattice = (*LiarDevice)(nil)
)

// Lie is how a LiarDevice corrupts a product it returns. On the lwe
// level's u32 product (MatMulU32) the element-wise lies read each word as
// its centred value, the int32 in [-2^31, 2^31) it stands for mod 2^32,
// and write the result back mod 2^32: FlipOne negates the word of largest
// centred magnitude (adding 1 where negation leaves it as it was: 0 and
// 2^31), ScaleRow and Noise round what they add to an integer. The row
// lies (Stale, OtherWeight, ZeroRows, PermuteRows) do to words what they
// do to floats.
type Lie int

const (
	// Honest returns the product as computed.
	Honest Lie = iota
	// FlipOne negates the largest element of one row.
	FlipOne
	// ScaleRow multiplies one row by 1 + Amount.
	ScaleRow
	// Noise adds Gaussian noise of 2-norm Amount x the row's 2-norm to
	// one row.
	Noise
	// Stale returns this weight's result of an earlier call of the same
	// shape (honest while there is none).
	Stale
	// OtherWeight returns the product with another resident weight of the
	// same shape (honest while there is none).
	OtherWeight
	// ZeroRows zeroes every row.
	ZeroRows
	// PermuteRows rotates the rows by one.
	PermuteRows
)

var lieNames = [...]string{"honest", "flip-one", "scale-row", "noise", "stale", "other-weight", "zero-rows", "permute-rows"}

func (l Lie) String() string {
	if int(l) >= 0 && int(l) < len(lieNames) {
		return lieNames[l]
	}
	return fmt.Sprintf("lie(%d)", int(l))
}

// Lies lists every lie but Honest.
func Lies() []Lie { return []Lie{FlipOne, ScaleRow, Noise, Stale, OtherWeight, ZeroRows, PermuteRows} }

// LiarDevice wraps a device and corrupts its results on the calls At
// picks: the adversary of the integrity tests. It computes the honest
// product first, so every lie is measured against it.
type LiarDevice struct {
	Inner Device
	// Lie and Amount say how to corrupt; Row is the row one-row lies hit
	// (taken modulo the row count). An adaptive liar changes them between
	// calls.
	Lie    Lie
	Amount float64
	Row    int
	// At picks the calls to lie on by their index (0 for the first
	// product); nil lies on every call.
	At func(call int, weight string) bool
	// Rand drives Noise; nil uses a fixed seed.
	Rand *rand.Rand

	mu     sync.Mutex
	calls  int
	lies   int
	last   map[string][]float32 // the previous honest result per weight and size
	lastU  map[string][]uint32  // the same for u32 products
	shapes map[string][2]int
	int8s  map[string]bool // weights uploaded as wire.Int8 (OtherWeight's u32 candidates)
}

// NewLiar wraps inner, honest until Lie is set.
func NewLiar(inner Device) *LiarDevice {
	return &LiarDevice{Inner: inner, last: map[string][]float32{}, lastU: map[string][]uint32{},
		shapes: map[string][2]int{}, int8s: map[string]bool{}}
}

// Lies counts the results it corrupted.
func (l *LiarDevice) Lies() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lies
}

func (l *LiarDevice) Upload(name string, w []float32, rows, cols int) error {
	l.mu.Lock()
	l.shapes[name] = [2]int{rows, cols}
	delete(l.int8s, name)
	l.mu.Unlock()
	return l.Inner.Upload(name, w, rows, cols)
}

func (l *LiarDevice) UploadBF16(name string, w []uint16, rows, cols int) error {
	l.mu.Lock()
	l.shapes[name] = [2]int{rows, cols}
	delete(l.int8s, name)
	l.mu.Unlock()
	return l.Inner.UploadBF16(name, w, rows, cols)
}

func (l *LiarDevice) UploadQ(name string, w *wire.Matrix) error {
	l.mu.Lock()
	l.shapes[name] = [2]int{w.Rows, w.Cols}
	l.int8s[name] = w.Format == wire.Int8
	l.mu.Unlock()
	return l.Inner.UploadQ(name, w)
}

func (l *LiarDevice) MatMul(op, weight string, x []float32, m int, y []float32) error {
	if err := l.Inner.MatMul(op, weight, x, m, y); err != nil {
		return err
	}
	return l.corrupt(weight, m, y, func(other string, dst []float32) error { return l.Inner.MatMul(op, other, x, m, dst) })
}

func (l *LiarDevice) MatMulQ(op, weight string, x *wire.Activations, y []float32) error {
	if err := l.Inner.MatMulQ(op, weight, x, y); err != nil {
		return err
	}
	return l.corrupt(weight, x.Rows(), y, func(other string, dst []float32) error { return l.Inner.MatMulQ(op, other, x, dst) })
}

// MatMulU32 forwards the lwe product to an inner device that has it (an
// error naming its type otherwise) and corrupts the words it returns.
// OtherWeight takes another int8 weight of the same shape.
func (l *LiarDevice) MatMulU32(op, weight string, c []uint32, m int, y []uint32) error {
	lat, ok := l.Inner.(Lattice)
	if !ok {
		return fmt.Errorf("liar: %s on %q: the wrapped device (%T) has no u32 product", op, weight, l.Inner)
	}
	if err := lat.MatMulU32(op, weight, c, m, y); err != nil {
		return err
	}
	return corruptRows(l, l.lastU, weight, m, y, func(name string) bool { return l.int8s[name] },
		func(other string, dst []uint32) error { return lat.MatMulU32(op, other, c, m, dst) }, l.lieWords)
}

// corrupt applies the lie to y (m rows) when At picks this call; other
// computes the same payload's product with another weight.
func (l *LiarDevice) corrupt(weight string, m int, y []float32, other func(string, []float32) error) error {
	return corruptRows(l, l.last, weight, m, y, func(string) bool { return true }, other, l.lieFloats)
}

// corruptRows applies the lie to y (m rows of float32 or uint32) when At
// picks this call: the row lies here, the element-wise ones (FlipOne,
// ScaleRow, Noise) by elem on the chosen row. last keeps each weight's
// previous honest result (Stale); OtherWeight computes the payload's
// product, by other, with the first other resident weight of the same
// shape that eligible admits.
func corruptRows[T float32 | uint32](l *LiarDevice, last map[string][]T, weight string, m int, y []T,
	eligible func(string) bool, other func(string, []T) error, elem func(call int, row []T)) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	call := l.calls
	l.calls++
	key := fmt.Sprintf("%s/%d", weight, len(y))
	prev := last[key]
	last[key] = append(last[key][:0:0], y...)
	if l.Lie == Honest || (l.At != nil && !l.At(call, weight)) || m == 0 {
		return nil
	}
	cols := len(y) / m
	row := y[(l.Row%m)*cols : (l.Row%m+1)*cols]
	switch l.Lie {
	case FlipOne, ScaleRow, Noise:
		elem(call, row)
	case Stale:
		if prev == nil {
			return nil
		}
		copy(y, prev)
	case OtherWeight:
		sh, ok := l.shapes[weight]
		if !ok {
			return nil
		}
		names := make([]string, 0, len(l.shapes))
		for n, s := range l.shapes {
			if n != weight && s == sh && eligible(n) {
				names = append(names, n)
			}
		}
		if len(names) == 0 {
			return nil
		}
		slices.Sort(names)
		l.mu.Unlock()
		err := other(names[0], y)
		l.mu.Lock()
		if err != nil {
			return err
		}
	case ZeroRows:
		clear(y)
	case PermuteRows:
		if m < 2 {
			return nil
		}
		first := append([]T(nil), y[:cols]...)
		copy(y, y[cols:])
		copy(y[(m-1)*cols:], first)
	default:
		return fmt.Errorf("liar: unknown lie %v", l.Lie)
	}
	l.lies++
	return nil
}

// lieFloats applies FlipOne, ScaleRow or Noise to one float row.
func (l *LiarDevice) lieFloats(call int, row []float32) {
	switch l.Lie {
	case FlipOne:
		j := 0
		for i, v := range row {
			if math.Abs(float64(v)) > math.Abs(float64(row[j])) {
				j = i
			}
		}
		row[j] = -row[j]
	case ScaleRow:
		for i := range row {
			row[i] *= float32(1 + l.Amount)
		}
	case Noise:
		d, f := noiseDir(l, call, row, func(v float32) float64 { return float64(v) })
		for i := range row {
			row[i] += float32(f * d[i])
		}
	}
}

// lieWords applies FlipOne, ScaleRow or Noise to one row of u32 words,
// each read as its centred value (see Lie).
func (l *LiarDevice) lieWords(call int, row []uint32) {
	centred := func(v uint32) float64 { return float64(int32(v)) }
	switch l.Lie {
	case FlipOne:
		j := 0
		for i, v := range row {
			if math.Abs(centred(v)) > math.Abs(centred(row[j])) {
				j = i
			}
		}
		if w := -row[j]; w != row[j] {
			row[j] = w
		} else {
			row[j]++
		}
	case ScaleRow:
		for i, v := range row {
			row[i] += wrapWord(math.Round(centred(v) * l.Amount))
		}
	case Noise:
		d, f := noiseDir(l, call, row, centred)
		for i := range row {
			row[i] += wrapWord(math.Round(f * d[i]))
		}
	}
}

// noiseDir draws Noise's Gaussian direction d for row and the factor f
// that gives f*d a 2-norm of Amount x the row's (its values read by val).
func noiseDir[T float32 | uint32](l *LiarDevice, call int, row []T, val func(T) float64) ([]float64, float64) {
	r := l.Rand
	if r == nil {
		r = rand.New(rand.NewPCG(1, uint64(call)))
	}
	d := make([]float64, len(row))
	n := 0.0
	for i := range d {
		d[i] = r.NormFloat64()
		n += d[i] * d[i]
	}
	norm := 0.0
	for _, v := range row {
		norm += val(v) * val(v)
	}
	return d, l.Amount * math.Sqrt(norm/n)
}

// wrapWord is the integer x (finite) mod 2^32; 0 for a non-finite x.
func wrapWord(x float64) uint32 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return uint32(int64(math.Mod(x, 1<<32)))
}
