package rowspace

import "testing"

// BenchmarkSpanFullVocab is the decode span test at Qwen3 sizes: V =
// 151936 dictionary rows of width 1024 against a 16-row payload (the
// dictionary alone is 1.2 GB of float64; run with -bench, not in CI).
func BenchmarkSpanFullVocab(b *testing.B) {
	rng := NewRand(1)
	D := NormalizeRows(Gaussian(151936, 1024, rng))
	U := masked(secret(D, []int{4242}), 15, 4, rng)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := SpanMembership(U, D, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if res.Ranking[0] != 4242 {
			b.Fatalf("top-1 %d", res.Ranking[0])
		}
	}
}

// BenchmarkGramSpikeFullVocab: the same sizes for the Gram statistic.
func BenchmarkGramSpikeFullVocab(b *testing.B) {
	rng := NewRand(1)
	D := NormalizeRows(Gaussian(151936, 1024, rng))
	U := masked(secret(D, []int{4242}), 15, 4, rng)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := GramSpike(U, D, SpikeOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
