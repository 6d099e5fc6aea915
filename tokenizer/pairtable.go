package tokenizer

// pairTable maps a packed pair of token ids to its merge. It is an
// open-addressing hash table with linear probing, about twice as fast as a
// Go map for this one job, which is the inner loop of BPE.
type pairTable struct {
	slots []pairSlot
	shift uint // 64 - log2(len(slots))
	n     int
}

type pairSlot struct {
	key uint64
	val merge
}

const emptyKey = ^uint64(0) // the pair (-1, -1), which cannot occur

func newPairTable(n int) *pairTable {
	size, bits := 16, uint(4)
	for size < 2*n {
		size *= 2
		bits++
	}
	t := &pairTable{slots: make([]pairSlot, size), shift: 64 - bits}
	for i := range t.slots {
		t.slots[i].key = emptyKey
	}
	return t
}

func (t *pairTable) index(key uint64) int { return int((key * 0x9E3779B97F4A7C15) >> t.shift) }

// put inserts or replaces; the table must have been made large enough.
func (t *pairTable) put(key uint64, v merge) {
	mask := len(t.slots) - 1
	for i := t.index(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key == key {
			s.val = v
			return
		}
		if s.key == emptyKey {
			s.key, s.val = key, v
			t.n++
			return
		}
	}
}

func (t *pairTable) get(key uint64) (merge, bool) {
	mask := len(t.slots) - 1
	for i := t.index(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key == key {
			return s.val, true
		}
		if s.key == emptyKey {
			return merge{}, false
		}
	}
}

func (t *pairTable) len() int { return t.n }
