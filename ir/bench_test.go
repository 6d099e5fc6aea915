package ir

import "testing"

// benchModule is both phases of a 28-layer decoder, about 1,500 nodes.
func benchModule(b *testing.B) (*Module, int) {
	pre, _ := decoderGraph(b, "prefill", 128, 28)
	dec, _ := decoderGraph(b, "decode", 128, 28)
	return &Module{Meta: map[string]string{"model": "bench"}, Graphs: []*Graph{pre, dec}}, len(pre.Nodes) + len(dec.Nodes)
}

func reportNodes(b *testing.B, nodes int) {
	b.ReportMetric(float64(nodes*b.N)/b.Elapsed().Seconds(), "nodes/s")
}

func BenchmarkPrint(b *testing.B) {
	m, nodes := benchModule(b)
	for b.Loop() {
		Print(m)
	}
	reportNodes(b, nodes)
}

func BenchmarkParse(b *testing.B) {
	m, nodes := benchModule(b)
	text := Print(m)
	for b.Loop() {
		if _, err := Parse(text); err != nil {
			b.Fatal(err)
		}
	}
	reportNodes(b, nodes)
}

func BenchmarkValidate(b *testing.B) {
	m, nodes := benchModule(b)
	for b.Loop() {
		if err := ValidateModule(m); err != nil {
			b.Fatal(err)
		}
	}
	reportNodes(b, nodes)
}

func BenchmarkTopoOrder(b *testing.B) {
	m, nodes := benchModule(b)
	for b.Loop() {
		for _, g := range m.Graphs {
			if _, err := TopoOrder(g); err != nil {
				b.Fatal(err)
			}
		}
	}
	reportNodes(b, nodes)
}

func BenchmarkDiff(b *testing.B) {
	m, nodes := benchModule(b)
	m2, _ := benchModule(b)
	for b.Loop() {
		Diff(m, m2)
	}
	reportNodes(b, nodes)
}
