package device

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"gelo/device/wire"
)

var _ Device = (*LiarDevice)(nil)

// Lie is how a LiarDevice corrupts a product it returns.
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
	shapes map[string][2]int
}

// NewLiar wraps inner, honest until Lie is set.
func NewLiar(inner Device) *LiarDevice {
	return &LiarDevice{Inner: inner, last: map[string][]float32{}, shapes: map[string][2]int{}}
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
	l.mu.Unlock()
	return l.Inner.Upload(name, w, rows, cols)
}

func (l *LiarDevice) UploadBF16(name string, w []uint16, rows, cols int) error {
	l.mu.Lock()
	l.shapes[name] = [2]int{rows, cols}
	l.mu.Unlock()
	return l.Inner.UploadBF16(name, w, rows, cols)
}

func (l *LiarDevice) UploadQ(name string, w *wire.Matrix) error {
	l.mu.Lock()
	l.shapes[name] = [2]int{w.Rows, w.Cols}
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

// corrupt applies the lie to y (m rows) when At picks this call; other
// computes the same payload's product with another weight.
func (l *LiarDevice) corrupt(weight string, m int, y []float32, other func(string, []float32) error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	call := l.calls
	l.calls++
	key := fmt.Sprintf("%s/%d", weight, len(y))
	prev := l.last[key]
	l.last[key] = append(l.last[key][:0:0], y...)
	if l.Lie == Honest || (l.At != nil && !l.At(call, weight)) || m == 0 {
		return nil
	}
	cols := len(y) / m
	row := y[(l.Row%m)*cols : (l.Row%m+1)*cols]
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
			norm += float64(v) * float64(v)
		}
		f := l.Amount * math.Sqrt(norm/n)
		for i := range row {
			row[i] += float32(f * d[i])
		}
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
			if n != weight && s == sh {
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
		first := append([]float32(nil), y[:cols]...)
		copy(y, y[cols:])
		copy(y[(m-1)*cols:], first)
	default:
		return fmt.Errorf("liar: unknown lie %v", l.Lie)
	}
	l.lies++
	return nil
}
