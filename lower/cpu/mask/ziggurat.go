package mask

import "math"

// Ziggurat sampler for standard normals (Marsaglia & Tsang, "The
// Ziggurat Method for Generating Random Variables", JSS 5(8), 2000), with
// 256 layers and 32 random bits per sample on the fast path:
//
//	bits 0..7   layer l
//	bit  8      sign
//	bits 9..31  23-bit magnitude m
//
// Layer l >= 1 is the rectangle [0, x_l] x [f(x_l), f(x_{l-1})] (x_0 = 0,
// f(x) = exp(-x^2/2)); layer 0 is the base strip [0, q] x [0, f(r)]
// (r = x_255, q = v / f(r)) whose part beyond r stands for the tail. All
// 256 layers have area v. A sample is x = m * w_l with w_l = x_l / 2^23
// (w_0 = q / 2^23); it is accepted at once when m < k_l = floor(x_{l-1}
// / x_l * 2^23) (k_0 = floor(r / q * 2^23)), i.e. when x lies in the part
// of the layer under the curve: 98.5 % of samples. The rest go to zigSlow
// (wedge test, or Marsaglia's tail method for layer 0), which draws
// further 64-bit words from the same generator.
//
// Unlike the original RNOR, the layer index and sign do not share bits
// with the magnitude (Doornik 2005). Fast-path samples lie on a grid of
// step x_l / 2^23 (at most q / 2^23 = 4.7e-7): at most two float32 ulps
// near a layer's outer edge, coarser than float32 towards 0, as in any
// 32-bit ziggurat. The product m * w_l is formed in float64 and rounded
// once to float32.
//
// The tables are computed at init from the published r of the 256-layer
// normal ziggurat (as in Rust's rand_distr) and v = r f(r) + sqrt(pi/2)
// erfc(r/sqrt(2)) to full float64 precision (the top layer's area then
// matches v to 1e-13 relative) with this file's own exp and log
// (zexp, zlog: ports of Go's portable math.Exp and math.Log with every
// product explicitly rounded, so no compiler may fuse them into FMAs) and
// the correctly rounded math.Sqrt. math.Exp is implemented in assembly on
// amd64 (with FMA where the CPU has it), arm64, loong64 and s390x, and the
// portable math code may be compiled with fused multiply-adds, so using
// math would make the tables, and the slow path, depend on the machine;
// with zexp and zlog every sample is a pure function of the generator's
// bits on every platform.
const (
	zigLayers = 256
	zigR      = 3.6541528853610088   // x_255, right edge of the outermost rectangle
	zigV      = 0.004928673233974658 // area of every layer: r f(r) + integral of f over (r, inf)
	zigScale  = 1 << 23              // magnitude range
	zigInvS   = 1.0 / zigScale
	zigMask   = zigLayers - 1   // layer bits
	zigSign   = zigLayers       // sign bit
	zigIdx    = 2*zigLayers - 1 // layer and sign bits: fast-table index
	zigMagSh  = 9               // magnitude shift
	zig53     = 1.0 / (1 << 53)
	zigInvR   = 1 / zigR
)

var (
	// Fast-path tables, indexed by the low 9 bits (layer | sign): zigK is
	// the magnitude bound k_l, zigW the signed step +-w_l.
	zigK [2 * zigLayers]uint32
	zigW [2 * zigLayers]float64
	zigF [zigLayers]float64 // f(x_l); zigF[0] = f(x_0) = 1
)

func init() { zigInit() }

func zigInit() {
	var x [zigLayers]float64
	x[zigLayers-1] = zigR
	fr := zexp(-float64(0.5*zigR) * zigR)
	for i := zigLayers - 2; i >= 1; i-- {
		xi := x[i+1]
		fi := zexp(-float64(0.5*xi) * xi)
		x[i] = math.Sqrt(-2 * zlog(zigV/xi+fi))
	}
	q := zigV / fr
	zigW[0] = q * zigInvS
	zigK[0] = uint32(zigR / q * zigScale)
	zigF[0] = 1
	for l := 1; l < zigLayers; l++ {
		zigW[l] = x[l] * zigInvS
		zigK[l] = uint32(x[l-1] / x[l] * zigScale) // x[0] = 0: the top cap has no fast path
		zigF[l] = zexp(-float64(0.5*x[l]) * x[l])
	}
	for l := 0; l < zigLayers; l++ {
		zigK[l|zigSign] = zigK[l]
		zigW[l|zigSign] = -zigW[l]
	}
}

// zigFill fills dst with standard normals drawn from g. The stream is
// consumed one buffer segment (64 or 60 words, see cc8) at a time: each
// word of the segment gives two 32-bit candidates, low half first, for
// consecutive elements of dst; then the candidates of that segment that
// missed the fast path are finished by zigSlow in element order, drawing
// the words that follow the segment. An odd last element uses the low half
// of one more word (the high half is dropped). The output is a pure
// function of g's stream.
func zigFill(g *cc8, dst []float32) {
	var pend [128]uint64 // slow candidates of one segment: index<<32 | bits
	i := 0
	for len(dst)-i >= 2 {
		if g.i >= g.n {
			g.refill()
		}
		words := g.buf[g.i&63 : g.n&127]
		if rem := (len(dst) - i) / 2; len(words) > rem {
			words = words[:rem]
		}
		g.i += uint32(len(words))
		out := dst[i : i+2*len(words)]
		np := zigWords(words, out, &pend)
		for _, p := range pend[:np] {
			out[p>>32] = zigSlow(g, uint32(p))
		}
		i += len(out)
	}
	if i < len(dst) {
		dst[i] = zigOne(g, uint32(g.next()))
	}
	clear(pend[:])
}

// zigWords turns each word of words into two fast-path samples in out
// (len(out) = 2*len(words) <= 128) and records the candidates that missed
// the fast path in pend (index<<32 | bits, in element order); it returns
// their number. The fast-path value written for those is overwritten by
// the caller.
func zigWords(words []uint64, out []float32, pend *[128]uint64) int {
	np := 0
	out = out[:2*len(words)]
	for t, u := range words {
		a, b := uint32(u), uint32(u>>32)
		o := out[2*t : 2*t+2 : 2*t+2]
		o[0] = float32(float64(a>>zigMagSh) * zigW[a&zigIdx])
		o[1] = float32(float64(b>>zigMagSh) * zigW[b&zigIdx])
		if a>>zigMagSh >= zigK[a&zigIdx] {
			pend[np&127] = uint64(2*t)<<32 | uint64(a)
			np++
		}
		if b>>zigMagSh >= zigK[b&zigIdx] {
			pend[np&127] = uint64(2*t+1)<<32 | uint64(b)
			np++
		}
	}
	return np
}

// zigOne is one sample from the 32-bit candidate u.
func zigOne(g *cc8, u uint32) float32 {
	if u>>zigMagSh < zigK[u&zigIdx] {
		return float32(float64(u>>zigMagSh) * zigW[u&zigIdx])
	}
	return zigSlow(g, u)
}

// zigSlow finishes a sample whose 32 bits u missed the fast path.
// Rejected candidates restart from the low 32 bits of the next word.
func zigSlow(g *cc8, u uint32) float32 {
	for {
		l, m := u&zigMask, u>>zigMagSh
		var x float64
		switch {
		case m < zigK[l]:
			x = float64(m) * zigW[l]
		case l == 0:
			x = zigR + zigTail(g)
		default:
			x = float64(m) * zigW[l]
			// Wedge: accept with probability (f(x) - f(x_l)) / (f(x_{l-1}) - f(x_l)).
			un := float64(g.next()>>11) * zig53
			xr := float64(float32(x)) // test the value that is returned
			y := zigF[l] + float64(un*(zigF[l-1]-zigF[l]))
			if !(y < zexp(-float64(0.5*xr)*xr)) {
				u = uint32(g.next())
				continue
			}
		}
		if u&zigSign != 0 {
			x = -x
		}
		return float32(x)
	}
}

// zigTail returns X - r for X from the normal tail beyond r (Marsaglia
// 1964): x = -log(u1)/r, y = -log(u2) until 2y >= x^2, with u1, u2 in
// (0, 1] from 53 bits each.
func zigTail(g *cc8) float64 {
	for {
		x := float64(-zlog(float64(g.next()>>11+1)*zig53) * zigInvR) // rounded: never fused into r + x
		y := -zlog(float64(g.next()>>11+1) * zig53)
		if y+y >= float64(x*x) {
			return x
		}
	}
}

// zlog is the natural logarithm for finite x > 0: Go's portable math.Log
// (FreeBSD e_log.c) with every product rounded explicitly, so the result
// is the same on every architecture. Within 1 ulp of math.Log.
func zlog(x float64) float64 {
	const (
		ln2Hi = 6.93147180369123816490e-01 // 3fe62e42 fee00000
		ln2Lo = 1.90821492927058770002e-10 // 3dea39ef 35793c76
		l1    = 6.666666666666735130e-01   // 3FE55555 55555593
		l2    = 3.999999999940941908e-01   // 3FD99999 9997FA04
		l3    = 2.857142874366239149e-01   // 3FD24924 94229359
		l4    = 2.222219843214978396e-01   // 3FCC71C5 1D8E78AF
		l5    = 1.818357216161805012e-01   // 3FC74664 96CB03DE
		l6    = 1.531383769920937332e-01   // 3FC39A09 D078C69F
		l7    = 1.479819860511658591e-01   // 3FC2F112 DF3E5244
	)
	f1, ki := math.Frexp(x)
	if f1 < math.Sqrt2/2 {
		f1 *= 2
		ki--
	}
	f := f1 - 1
	k := float64(ki)
	s := f / (2 + f)
	s2 := float64(s * s)
	s4 := float64(s2 * s2)
	t1 := float64(s2 * (l1 + float64(s4*(l3+float64(s4*(l5+float64(s4*l7)))))))
	t2 := float64(s4 * (l2 + float64(s4*(l4+float64(s4*l6)))))
	r := t1 + t2
	hfsq := float64(float64(0.5*f) * f)
	return float64(k*ln2Hi) - ((hfsq - (float64(s*(hfsq+r)) + float64(k*ln2Lo))) - f)
}

// zexp is e^x for -708 <= x <= 709: Go's portable math.Exp (FreeBSD
// e_exp.c) with every product rounded explicitly, so the result is the
// same on every architecture. Within 1 ulp of math.Exp.
func zexp(x float64) float64 {
	const (
		ln2Hi = 6.93147180369123816490e-01
		ln2Lo = 1.90821492927058770002e-10
		log2e = 1.44269504088896338700e+00
		p1    = 1.66666666666666657415e-01  // 0x3FC55555; 0x55555555
		p2    = -2.77777777770155933842e-03 // 0xBF66C16C; 0x16BEBD93
		p3    = 6.61375632143793436117e-05  // 0x3F11566A; 0xAF25DE2C
		p4    = -1.65339022054652515390e-06 // 0xBEBBBD41; 0xC5D26BF1
		p5    = 4.13813679705723846039e-08  // 0x3E663769; 0x72BEA4D0
		near0 = 1.0 / (1 << 28)
	)
	if -near0 < x && x < near0 {
		return 1 + x
	}
	var k int
	switch {
	case x < 0:
		k = int(float64(log2e*x) - 0.5)
	case x > 0:
		k = int(float64(log2e*x) + 0.5)
	}
	hi := x - float64(float64(k)*ln2Hi)
	lo := float64(float64(k) * ln2Lo)
	r := hi - lo
	t := float64(r * r)
	c := r - float64(t*(p1+float64(t*(p2+float64(t*(p3+float64(t*(p4+float64(t*p5)))))))))
	y := 1 - ((lo - float64(r*c)/(2-c)) - hi)
	return math.Ldexp(y, k)
}
