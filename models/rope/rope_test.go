package rope

import (
	"math"
	"testing"
)

func TestTables(t *testing.T) {
	cos, sin, err := Tables(8, 10000, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(cos) != 20 || len(sin) != 20 {
		t.Fatalf("lengths %d %d", len(cos), len(sin))
	}
	for i := 0; i < 4; i++ { // position 0: no rotation
		if cos[i] != 1 || sin[i] != 0 {
			t.Fatalf("p=0 i=%d: cos %v sin %v", i, cos[i], sin[i])
		}
	}
	// p = 3, i = 1: angle 3 * 10000^(-2/8) in float64, rounded once.
	s, c := math.Sincos(3 * math.Pow(10000, -0.25))
	if cos[3*4+1] != float32(c) || sin[3*4+1] != float32(s) {
		t.Fatalf("p=3 i=1: %v %v", cos[13], sin[13])
	}
	for _, bad := range [][3]float64{{0, 1, 1}, {3, 1, 1}, {8, 0, 1}, {8, math.NaN(), 1}, {8, 1, 0}} {
		if _, _, err := Tables(int(bad[0]), bad[1], int(bad[2])); err == nil {
			t.Errorf("Tables%v accepted", bad)
		}
	}
}
