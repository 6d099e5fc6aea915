package ir

import (
	"strings"
	"testing"
)

// The lwe ops' type rules: encode f32 -> u32 rows, a u32 x int8 product
// with no bias, decode u32 -> f32 against the weight it multiplied, and
// the parameter bounds.
func TestLatticeTypes(t *testing.T) {
	enc := Attrs{"slot": int64(0), "lambda": int64(4096), "h": int64(80), "delta": int64(16)}
	with := func(k string, v int64) Attrs {
		a := Attrs{}
		for kk, vv := range enc {
			a[kk] = vv
		}
		a[k] = v
		return a
	}
	for _, tc := range []struct {
		name string
		run  func(g *Graph) error
		want string // "" = no error
	}{
		{"pipeline", func(g *Graph) error {
			x, _ := g.AddDeclared(OpInput, Attrs{"name": "x"}, T(F32, S("n"), D(64)))
			w, _ := g.AddDeclared(OpWeight, Attrs{"name": "w"}, T(I8, D(32), D(64)))
			c, err := g.Add(OpLWEEncode, enc, x)
			if err != nil {
				return err
			}
			if got := g.Node(c).Type; !got.Equal(T(U32, S("n"), D(64))) {
				t.Errorf("encode: %v", got)
			}
			y, err := g.Add(OpMatMul, nil, c, w)
			if err != nil {
				return err
			}
			if got := g.Node(y).Type; !got.Equal(T(U32, S("n"), D(32))) {
				t.Errorf("product: %v", got)
			}
			d, err := g.Add(OpLWEDecode, Attrs{"slot": int64(0)}, y, w)
			if err != nil {
				return err
			}
			if got := g.Node(d).Type; !got.Equal(T(F32, S("n"), D(32))) {
				t.Errorf("decode: %v", got)
			}
			if g.Node(c).Secrecy != Public || g.Node(d).Secrecy != Secret {
				t.Errorf("secrecy: encode %v, decode %v", g.Node(c).Secrecy, g.Node(d).Secrecy)
			}
			return nil
		}, ""},
		{"u32 rows need an int8 weight", func(g *Graph) error {
			x, _ := g.AddDeclared(OpInput, Attrs{"name": "x"}, T(F32, D(1), D(64)))
			w, _ := g.AddDeclared(OpWeight, Attrs{"name": "w"}, T(F32, D(32), D(64)))
			c, _ := g.Add(OpLWEEncode, enc, x)
			_, err := g.Add(OpMatMul, nil, c, w)
			return err
		}, "int8 weight"},
		{"no bias on ciphertexts", func(g *Graph) error {
			x, _ := g.AddDeclared(OpInput, Attrs{"name": "x"}, T(F32, D(1), D(64)))
			w, _ := g.AddDeclared(OpWeight, Attrs{"name": "w"}, T(I8, D(32), D(64)))
			b, _ := g.AddDeclared(OpWeight, Attrs{"name": "b"}, T(F32, D(32)))
			c, _ := g.Add(OpLWEEncode, enc, x)
			_, err := g.Add(OpMatMul, nil, c, w, b)
			return err
		}, "no bias"},
		{"decode against another width", func(g *Graph) error {
			y, _ := g.AddDeclared(OpInput, Attrs{"name": "y"}, T(U32, D(1), D(32)))
			w, _ := g.AddDeclared(OpWeight, Attrs{"name": "w"}, T(I8, D(16), D(64)))
			_, err := g.Add(OpLWEDecode, Attrs{"slot": int64(0)}, y, w)
			return err
		}, "weight rows"},
		{"decode of floats", func(g *Graph) error {
			y, _ := g.AddDeclared(OpInput, Attrs{"name": "y"}, T(F32, D(1), D(32)))
			w, _ := g.AddDeclared(OpWeight, Attrs{"name": "w"}, T(I8, D(32), D(64)))
			_, err := g.Add(OpLWEDecode, Attrs{"slot": int64(0)}, y, w)
			return err
		}, "u32 rows"},
		{"h above lambda", func(g *Graph) error {
			x, _ := g.AddDeclared(OpInput, Attrs{"name": "x"}, T(F32, D(1), D(64)))
			_, err := g.Add(OpLWEEncode, with("h", 5000), x)
			return err
		}, "h 5000"},
		{"lambda too large", func(g *Graph) error {
			x, _ := g.AddDeclared(OpInput, Attrs{"name": "x"}, T(F32, D(1), D(64)))
			_, err := g.Add(OpLWEEncode, with("lambda", MaxLWELambda+1), x)
			return err
		}, "lambda"},
		{"delta zero", func(g *Graph) error {
			x, _ := g.AddDeclared(OpInput, Attrs{"name": "x"}, T(F32, D(1), D(64)))
			_, err := g.Add(OpLWEEncode, with("delta", 0), x)
			return err
		}, "delta 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run(&Graph{Name: "g", Params: []string{"n"}})
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
