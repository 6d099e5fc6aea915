// Package mask holds the TEE-side mask material and transforms of the
// GELO protection protocol.
//
// # Protocol
//
// The TEE holds secret rows H (n x d). It appends k shield rows S (k x d,
// Gaussian rows of norm energy x mean_i ||H_i||, energy 4 and k >= 8 by
// default) to form X = [H; S] with s = n + k rows, samples an orthogonal
// A (s x s) and ships U = A X to the device. The device returns U W for a
// public W; the TEE computes A^T (U W) = X W and drops the last k rows.
// Both transforms act on the ROW index of a row-major s x d matrix.
//
//	ws := mask.NewWorkspace(0)                          // long-lived, reused by every pass
//	rng, _ := mask.NewPassRNG(sessionKey, pass)         // fresh per forward pass
//	k, _ := mask.ShieldRows(mask.FamilyHD3, n, 0)      // s = n + k is a power of two
//	x := stack[:(n+k)*d]; copy(x, h)
//	_ = ws.FillShield(x[n*d:], k, d, h, n, mask.DefaultEnergy, rng)
//	m, _ := ws.Sample(mask.FamilyHD3, n+k, rng)
//	_ = m.Apply(x, d)                                   // -> device computes x W
//	_ = m.Unapply(y, out)                               // y = (A X) W -> X W
//	m.Zeroise(); rng.Zeroise()                          // end of the pass
//
// # Mask material
//
// RNG is a ChaCha20 keystream keyed per pass by HKDF-SHA256(sessionKey,
// salt "gelo/mask/v1", info "pass" || uint64_be(pass)) -> key || nonce.
// Everything drawn from it (uniforms, Gaussians by the Marsaglia polar
// method, packed sign bits) is a pure function of the byte stream, so the
// same key and pass give the same mask on every run.
//
// Shield rows (FillShield, Workspace.FillShield) are the bulk of the
// Gaussians of a pass, so they take only seeds from the stream: 32 bytes
// per block of ceil(1024/d) rows, each expanded with ChaCha8 (the
// chacha8rand stream of math/rand/v2's ChaCha8, computed eight blocks at a
// time by an AVX2 kernel where available) into a 256-layer ziggurat with
// 32 bits per sample. See FillShield for why this is sound.
//
// Families:
//
//   - Haar: A = Q diag(sign(diag R)) from a blocked float64 Householder QR
//     of an s x s Gaussian matrix: exactly Haar on O(s). O(s^3) sampling,
//     O(s^2) storage, O(s^2 d) per Apply.
//   - HD3: A = D3 H D2 H D1 H with normalised Walsh-Hadamard transforms and
//     random +-1 diagonals; s must be a power of two (ShieldRows pads with
//     extra shield rows). O(s) sampling and storage, O(s d log s) per
//     Apply; A is never materialised.
//
// # Determinism
//
// Work is split over a fixed team of goroutines by column blocks whose
// boundaries depend only on the shape, and every output element is
// computed by one goroutine with a fixed operation order: results are
// bit-identical for any worker count or GOMAXPROCS. The AVX2+FMA kernels
// (amd64, detected with golang.org/x/sys/cpu) and their portable Go
// twins perform the same IEEE operations in the same order (float32 fused
// multiply-add is emulated exactly in Go), so machines with and without
// AVX2 agree bit for bit on everything computed by this package's
// kernels. Gaussian sampling for Haar masks uses math.Log, which Go
// implements in assembly on some architectures, so Haar material is only
// guaranteed identical across machines of one architecture. Shield rows
// are identical everywhere: ChaCha8 is integer arithmetic, and the
// ziggurat uses only IEEE products, math.Sqrt, math.FMA and the package's
// own exp/log with explicitly rounded products. Build tag purego forces
// the Go kernels (and the math/rand/v2 ChaCha8 block function).
//
// # Memory and allocation
//
// A Workspace owns the team and every buffer; sampling a mask of a size
// seen before, and every Apply/Unapply of a shape seen before, allocate
// nothing. Haar keeps A packed twice in float32 (for A and A^T:
// 8*s*ceil4(s) bytes) plus s*s float64 of QR scratch; HD3 keeps 17*s
// float32 of factors plus a per-worker slab of about 512 KiB (64*s bytes
// once s > 8192). Workspace.FillShield keeps a ChaCha8 generator per
// worker (about 1 KiB each), 32 bytes of seed per row block and 8 bytes
// per data row, all wiped at the end of every fill.
// Zeroise wipes all of it; a zeroised mask refuses work, and Apply
// clears its input on any error so unmasked rows cannot leak by mistake.
// Internal state of crypto/hmac and crypto/sha256 used during HKDF cannot
// be wiped from outside the standard library; everything this package
// owns (PRK, OKM, ChaCha20 state, keystream buffer, shield seeds and
// ChaCha8 states) is.
package mask
