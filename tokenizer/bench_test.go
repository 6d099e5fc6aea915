package tokenizer

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// benchText builds a deterministic ~1 MB mixed text from the reference
// strings: shuffled, joined by spaces and newlines, with numbered variants so
// that not every word is already in the BPE cache.
func benchText(tb testing.TB) string {
	cases := loadReference(tb).Cases
	r := rand.New(rand.NewPCG(7, 7))
	var b strings.Builder
	for b.Len() < 1<<20 {
		c := cases[r.IntN(len(cases))]
		b.WriteString(c.Text)
		switch r.IntN(4) {
		case 0:
			b.WriteString("\n")
		case 1:
			b.WriteString(" w" + strconv.Itoa(r.IntN(100000)) + "x ")
		default:
			b.WriteString(" ")
		}
	}
	return b.String()
}

func BenchmarkEncode(b *testing.B) {
	tok := loadQwen(b)
	text := benchText(b)
	tok.Encode(text) // warm the cache, as in steady use
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	c0 := cpuTime()
	for i := 0; i < b.N; i++ {
		tok.Encode(text)
	}
	reportCPU(b, c0, len(text))
}

func BenchmarkEncodeNoCache(b *testing.B) {
	dir := qwenDir()
	if dir == "" {
		b.Skip(skipMessage)
	}
	tok, err := Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	tok.SetCacheSize(0)
	text := benchText(b)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	c0 := cpuTime()
	for i := 0; i < b.N; i++ {
		tok.Encode(text)
	}
	reportCPU(b, c0, len(text))
}

func BenchmarkDecode(b *testing.B) {
	tok := loadQwen(b)
	text := benchText(b)
	ids := tok.Encode(text)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tok.Decode(ids)
	}
}

func BenchmarkLoad(b *testing.B) {
	dir := qwenDir()
	if dir == "" {
		b.Skip(skipMessage)
	}
	c0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if _, err := Load(dir); err != nil {
			b.Fatal(err)
		}
	}
	if el := cpuTime() - c0; el > 0 {
		b.ReportMetric(el.Seconds()*1e3/float64(b.N), "cpu-ms/op")
	}
}

// BenchmarkEncodeShortWords encodes text built only from the reference
// strings of at most 100 bytes, leaving out the few very long single words
// (1000 a's and the like) whose BPE dominates BenchmarkEncode.
func BenchmarkEncodeShortWords(b *testing.B) {
	tok := loadQwen(b)
	var short []string
	for _, c := range loadReference(b).Cases {
		if len(c.Text) <= 100 {
			short = append(short, c.Text)
		}
	}
	r := rand.New(rand.NewPCG(7, 7))
	var sb strings.Builder
	for sb.Len() < 1<<20 {
		sb.WriteString(short[r.IntN(len(short))])
		sb.WriteString(" ")
	}
	text := sb.String()
	tok.Encode(text)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	c0 := cpuTime()
	for i := 0; i < b.N; i++ {
		tok.Encode(text)
	}
	reportCPU(b, c0, len(text))
}
