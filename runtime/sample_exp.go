package runtime

import "math"

// sampleExpNeg returns e^-d for d >= 0, and 0 for d > 708 (below the normal
// range), +Inf and NaN. It replaces math.Exp in the sampler because
// math.Exp is architecture- and even CPU-dependent (the amd64 assembly
// takes an FMA path only where the CPU has FMA), while sampling must give
// the same bits on every machine. Method (Tang): d*64/ln2 = 64m + j + f,
// e^-d = 2^-m * 2^(-j/64) * e^r with r = k*ln2/64 - d (Cody-Waite split,
// |r| <= ln2/128), e^r by a degree-5 Taylor polynomial (truncation
// < 4e-17). Every product is explicitly rounded so no compiler may fuse
// it into an FMA. Within 2 ulp of math.Exp (tested).
func sampleExpNeg(d float64) float64 {
	const (
		hiN   = 6.93147180369123816490e-01 / 64 // ln2/64, 32 significant bits
		loN   = 1.90821492927058770002e-10 / 64
		invLn = 64 * 1.44269504088896338700e+00 // 64/ln2
	)
	if !(d <= 708) {
		return 0
	}
	k := int(float64(d*invLn) + 0.5)
	fk := float64(k)
	r := (float64(fk*hiN) - d) + float64(fk*loN)
	q := float64(r * (1 + float64(r*(0.5+float64(r*(1.0/6+float64(r*(1.0/24+float64(r*(1.0/120))))))))))
	t := sampleExpTab[k&63]
	y := t + float64(t*q)
	return y * math.Float64frombits(uint64(1023-(k>>6))<<52)
}

// sampleExpTab[j] = 2^(-j/64), correctly rounded.
var sampleExpTab = [64]float64{
	0x1.0000000000000p+0, 0x1.fa7c1819e90d8p-1, 0x1.f50765b6e4540p-1, 0x1.efa1bee615a27p-1,
	0x1.ea4afa2a490dap-1, 0x1.e502ee78b3ff6p-1, 0x1.dfc97337b9b5fp-1, 0x1.da9e603db3285p-1,
	0x1.d5818dcfba487p-1, 0x1.d072d4a07897cp-1, 0x1.cb720dcef9069p-1, 0x1.c67f12e57d14bp-1,
	0x1.c199bdd85529cp-1, 0x1.bcc1e904bc1d2p-1, 0x1.b7f76f2fb5e47p-1, 0x1.b33a2b84f15fbp-1,
	0x1.ae89f995ad3adp-1, 0x1.a9e6b5579fdbfp-1, 0x1.a5503b23e255dp-1, 0x1.a0c667b5de565p-1,
	0x1.9c49182a3f090p-1, 0x1.97d829fde4e50p-1, 0x1.93737b0cdc5e5p-1, 0x1.8f1ae99157736p-1,
	0x1.8ace5422aa0dbp-1, 0x1.868d99b4492edp-1, 0x1.82589994cce13p-1, 0x1.7e2f336cf4e62p-1,
	0x1.7a11473eb0187p-1, 0x1.75feb564267c9p-1, 0x1.71f75e8ec5f74p-1, 0x1.6dfb23c651a2fp-1,
	0x1.6a09e667f3bcdp-1, 0x1.6623882552225p-1, 0x1.6247eb03a5585p-1, 0x1.5e76f15ad2148p-1,
	0x1.5ab07dd485429p-1, 0x1.56f4736b527dap-1, 0x1.5342b569d4f82p-1, 0x1.4f9b2769d2ca7p-1,
	0x1.4bfdad5362a27p-1, 0x1.486a2b5c13cd0p-1, 0x1.44e086061892dp-1, 0x1.4160a21f72e2ap-1,
	0x1.3dea64c123422p-1, 0x1.3a7db34e59ff7p-1, 0x1.371a7373aa9cbp-1, 0x1.33c08b26416ffp-1,
	0x1.306fe0a31b715p-1, 0x1.2d285a6e4030bp-1, 0x1.29e9df51fdee1p-1, 0x1.26b4565e27cddp-1,
	0x1.2387a6e756238p-1, 0x1.2063b88628cd6p-1, 0x1.1d4873168b9aap-1, 0x1.1a35beb6fcb75p-1,
	0x1.172b83c7d517bp-1, 0x1.1429aaea92de0p-1, 0x1.11301d0125b51p-1, 0x1.0e3ec32d3d1a2p-1,
	0x1.0b5586cf9890fp-1, 0x1.0874518759bc8p-1, 0x1.059b0d3158574p-1, 0x1.02c9a3e778061p-1,
}
