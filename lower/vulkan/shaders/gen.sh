#!/bin/sh
# Compiles the GLSL matmul shaders to SPIR-V, one per (kind, format), the
# lwe level's u32 product (u32.comp, in each kind's layout) and the
# whole-forward op shaders:
# go generate runs it into this directory; the regeneration test runs it
# into a temporary one and compares. Usage: gen.sh OUTDIR
set -eu
cd "$(dirname "$0")"
out=${1:-.}
for kind in matvec rows tiled; do
	for f in 0:f32 1:bf16 2:q8_0 3:q4_0 4:int8; do
		[ "$kind" = matvec ] && [ "${f%%:*}" -gt 1 ] && continue
		glslangValidator -V --target-env vulkan1.1 -DFMT="${f%%:*}" -o "$out/${kind}_${f#*:}.spv" "$kind.comp" >"$out/.log" || { cat "$out/.log"; exit 1; }
	done
done
# An int8 weight by uint32 words mod 2^32 (FMT 5), in the three layouts.
for kind in 0:matvec 1:rows 2:tiled; do
	glslangValidator -V --target-env vulkan1.1 -DFMT=5 -DKIND="${kind%%:*}" -o "$out/${kind#*:}_u32.spv" u32.comp >"$out/.log" || { cat "$out/.log"; exit 1; }
done
# The whole-forward engine's op shaders (fwd.glsl), one module each.
for op in embed rmsnorm rope attention ew quant; do
	glslangValidator -V --target-env vulkan1.1 -o "$out/fwd_$op.spv" "fwd_$op.comp" >"$out/.log" || { cat "$out/.log"; exit 1; }
done
rm -f "$out/.log"
glslangValidator --version | head -1 > "$out/GLSLANG_VERSION"
