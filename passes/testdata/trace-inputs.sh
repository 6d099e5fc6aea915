#!/bin/sh
# Regenerates the traced golden inputs (testdata/<pass>/tiny1*.in.ir) from
# the built-in qwen3-tiny cut to one layer: each is the IR the CLI dumps
# just before that pass, without its digest line (the header comments the
# test reads are added below it). The hand-written inputs are not touched.
# Run from the repository root: sh passes/testdata/trace-inputs.sh
# Then: go test ./passes -update, and read the diff.
set -eu
td=passes/testdata
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/gelo" ./cmd/gelo
"$tmp/gelo" synth --variant qwen3-tiny --layers 1 --out "$tmp/qwen3-tiny-1layer" >/dev/null

# dump FLAGS...: every per-pass dump of one compile, one file per pass.
dump() {
	rm -f "$tmp"/after.*
	"$tmp/gelo" compile --model "$tmp/qwen3-tiny-1layer" --dump-all --out /dev/null "$@" 2>"$tmp/dump"
	awk -v dir="$tmp" '/^\/\/ ---- IR after .* ----$/ { f = dir "/after." $5; next } { print > f }' "$tmp/dump"
}

# input PASS NAME AFTER HEADER: testdata/PASS/NAME.in.ir from the dump after AFTER.
input() {
	out="$td/$1/$2.in.ir"
	mkdir -p "$td/$1"
	{
		echo "gelo-ir v1"
		echo "// Traced: qwen3-tiny, 1 layer, the IR after $3 (passes/testdata/trace-inputs.sh)."
		printf '%s\n' "$4"
		sed -e '1,2d' -e 's|^meta model = .*|meta model = "qwen3-tiny-1layer"|' "$tmp/after.$3"
	} >"$out"
}

dump
input place tiny1 trace "// run: defaults"
input fuse tiny1 place "// run: defaults
// run no-concat: no-fuse=concat_proj"
input quantize tiny1 fuse "// run f32: weights=f32
// run bf16: weights=bf16
// run q8_0: weights=q8_0"
input protect tiny1 quantize "// run: defaults (hd3, per-forward, shield 8,4, centred, per-sequence)
// run haar-per-offload: mask=haar cadence=per-offload
// run shared: topology=shared center=false
// run none: mask=none"
input fuse_epilogue tiny1 protect "// run: defaults
// run off: no-fuse=swiglu"
input leakcheck tiny1 fuse_epilogue "// run: defaults"

dump --weights q8_0
input protect tiny1-q8_0 quantize "// run: weights=q8_0 (the quantize epilogue: masked rows cross as q8_0)"

dump --mask none
input leakcheck tiny1-none fuse_epilogue "// run: mask=none (the baseline: plaintext crossings recorded as insecure)
// run strict: (a protected plan's leakcheck refuses the same graph)"
