package device

import (
	"fmt"
	"sync"

	"gelo/device/wire"
)

var (
	_ Device  = (*SpyDevice)(nil)
	_ Lattice = (*SpyDevice)(nil)
)

// Direction says which way a payload crossed.
type Direction string

const (
	ToDevice Direction = "to-device"
	ToTEE    Direction = "to-tee"
)

// Crossing is one payload the spy saw: who sent it, its shape, a copy of
// its values. Weights are public and recorded by name only. A q8_0
// payload is recorded as the values it encodes (block scale x quant), so
// the leak tests compare what the device can read. A payload of the lwe
// level's product (Lattice) is recorded as the uint32 words that crossed,
// in Words, with Data nil.
type Crossing struct {
	Seq int
	// Pass, Phase and Index place the crossing: the forward pass it
	// belongs to (as the driver marked it with Mark), that pass's phase
	// (prefill or decode), and its position among the pass's payloads.
	Pass   int
	Phase  string
	Index  int
	Dir    Direction
	Op     string
	Weight string
	Rows   int
	Cols   int
	Data   []float32
	Q8     bool
	// Words holds a u32 payload (an lwe ciphertext, or the device's
	// product of one) word for word, in place of Data.
	Words []uint32
}

// SpyDevice wraps a device and records every payload that crosses the
// boundary in either direction: what an attacker on the bus or on the
// device sees. The leak tests and the attack harness read its record.
type SpyDevice struct {
	Inner Device
	// Keep, if not nil, chooses the crossings worth a copy (an attack
	// that reads two payloads a pass need not copy the other thousands);
	// the others are still numbered. Set it before the first MatMul.
	Keep func(dir Direction, index int, weight string) bool

	mu      sync.Mutex
	record  []Crossing
	uploads []string
	shapes  map[string][2]int
	pass    int
	phase   string
	index   int
}

// Mark starts a forward pass: the crossings that follow carry pass and
// phase, and are numbered from 0 within it. The driver of the session
// calls it before each Prefill or Decode; the device itself cannot know
// where passes begin, though a real attacker could tell from timing.
func (s *SpyDevice) Mark(pass int, phase string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pass, s.phase, s.index = pass, phase, 0
}

// NewSpy wraps inner.
func NewSpy(inner Device) *SpyDevice {
	return &SpyDevice{Inner: inner, shapes: map[string][2]int{}}
}

// Upload records the weight's name and shape, then forwards it.
func (s *SpyDevice) Upload(name string, w []float32, rows, cols int) error {
	s.mu.Lock()
	s.uploads = append(s.uploads, name)
	s.shapes[name] = [2]int{rows, cols}
	s.mu.Unlock()
	return s.Inner.Upload(name, w, rows, cols)
}

// UploadBF16 records the weight's name and shape, then forwards it.
func (s *SpyDevice) UploadBF16(name string, w []uint16, rows, cols int) error {
	s.mu.Lock()
	s.uploads = append(s.uploads, name)
	s.shapes[name] = [2]int{rows, cols}
	s.mu.Unlock()
	return s.Inner.UploadBF16(name, w, rows, cols)
}

// UploadBF16Dot records the weight's name and shape, then forwards it to
// an inner device with the bf16 dot product (an error otherwise).
func (s *SpyDevice) UploadBF16Dot(name string, w []uint16, rows, cols int) error {
	dd, ok := s.Inner.(BF16Dotter)
	if !ok {
		return fmt.Errorf("spy: upload %q: the wrapped device (%T) has no bf16 dot product", name, s.Inner)
	}
	s.mu.Lock()
	s.uploads = append(s.uploads, name)
	s.shapes[name] = [2]int{rows, cols}
	s.mu.Unlock()
	return dd.UploadBF16Dot(name, w, rows, cols)
}

// MatMul records the rows sent and the product returned.
func (s *SpyDevice) MatMul(op, weight string, x []float32, m int, y []float32) error {
	s.mu.Lock()
	shape, ok := s.shapes[weight]
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("spy: %s on weight %q that was never uploaded", op, weight)
	}
	s.add(ToDevice, op, weight, m, shape[1], x)
	if err := s.Inner.MatMul(op, weight, x, m, y); err != nil {
		return err
	}
	s.add(ToTEE, op, weight, m, shape[0], y)
	return nil
}

func (s *SpyDevice) add(dir Direction, op, weight string, rows, cols int, data []float32) {
	s.addCopy(Crossing{Dir: dir, Op: op, Weight: weight, Rows: rows, Cols: cols}, func(c *Crossing) {
		c.Data = append([]float32(nil), data...)
	})
}

// addWords records a u32 payload (never nil in the record, so a u32
// crossing is told by its Words even when it is empty).
func (s *SpyDevice) addWords(dir Direction, op, weight string, rows, cols int, words []uint32) {
	s.addCopy(Crossing{Dir: dir, Op: op, Weight: weight, Rows: rows, Cols: cols}, func(c *Crossing) {
		c.Words = append(make([]uint32, 0, len(words)), words...)
	})
}

// addCopy numbers the crossing c and, when Keep takes it, records it with
// the copy of its payload that fill makes (only then, so what Keep drops
// is never copied).
func (s *SpyDevice) addCopy(c Crossing, fill func(*Crossing)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Keep != nil && !s.Keep(c.Dir, s.index, c.Weight) {
		s.index++
		return
	}
	fill(&c)
	c.Seq, c.Pass, c.Phase, c.Index = len(s.record), s.pass, s.phase, s.index
	s.record = append(s.record, c)
	s.index++
}

// MatMulU32 records the ciphertext words sent and the words returned
// (Words, not Data), forwarding to an inner device with the lwe product
// (an error naming its type otherwise).
func (s *SpyDevice) MatMulU32(op, weight string, c []uint32, m int, y []uint32) error {
	lat, ok := s.Inner.(Lattice)
	if !ok {
		return fmt.Errorf("spy: %s on %q: the wrapped device (%T) has no u32 product", op, weight, s.Inner)
	}
	s.mu.Lock()
	shape, ok := s.shapes[weight]
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("spy: %s on weight %q that was never uploaded", op, weight)
	}
	s.addWords(ToDevice, op, weight, m, shape[1], c)
	if err := lat.MatMulU32(op, weight, c, m, y); err != nil {
		return err
	}
	s.addWords(ToTEE, op, weight, m, shape[0], y)
	return nil
}

// UploadQ records the quantized weight's name and shape, then forwards it.
func (s *SpyDevice) UploadQ(name string, w *wire.Matrix) error {
	s.mu.Lock()
	s.uploads = append(s.uploads, name)
	s.shapes[name] = [2]int{w.Rows, w.Cols}
	s.mu.Unlock()
	return s.Inner.UploadQ(name, w)
}

// MatMulQ records the q8_0 rows sent (as the values they encode) and the
// product returned.
func (s *SpyDevice) MatMulQ(op, weight string, x *wire.Activations, y []float32) error {
	s.mu.Lock()
	shape, ok := s.shapes[weight]
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("spy: %s on weight %q that was never uploaded", op, weight)
	}
	m, k := x.Rows(), x.Cols()
	s.mu.Lock()
	keep := s.Keep == nil || s.Keep(ToDevice, s.index, weight)
	s.mu.Unlock()
	if keep {
		vals := make([]float32, m*k)
		if err := x.Dequantize(vals); err != nil {
			return fmt.Errorf("spy: %s: %w", op, err)
		}
		s.mu.Lock()
		s.record = append(s.record, Crossing{Seq: len(s.record), Pass: s.pass, Phase: s.phase, Index: s.index, Dir: ToDevice, Op: op, Weight: weight,
			Rows: m, Cols: k, Data: vals, Q8: true})
		s.index++
		s.mu.Unlock()
	} else {
		s.mu.Lock()
		s.index++
		s.mu.Unlock()
	}
	if err := s.Inner.MatMulQ(op, weight, x, y); err != nil {
		return err
	}
	s.add(ToTEE, op, weight, m, shape[0], y)
	return nil
}

// Record returns the crossings so far (shared; do not modify).
func (s *SpyDevice) Record() []Crossing {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.record[:len(s.record):len(s.record)]
}

// Len is the number of crossings recorded, a mark between forward passes.
func (s *SpyDevice) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.record)
}

// Uploads lists the weights uploaded, in order.
func (s *SpyDevice) Uploads() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.uploads...)
}

// Reset drops the crossings recorded so far (an attacker's oracle calls it
// between queries so its memory stays bounded); uploads are kept.
func (s *SpyDevice) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record, s.index = nil, 0
}
