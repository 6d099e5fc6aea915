#!/usr/bin/env bash
# tools/quality/run.sh: the quality table of issue 51. Not run in CI: it takes
# about a quarter of an hour on two cores (level exact with every op offloaded
# is most of it) and needs the held-out text of tools/train/corpus.sh.
#
# On the held-out text at --ctx CTX it runs gelo perplexity once as the base
# (the f32 model at --security none, its log-probabilities saved as f32), then
# against that base (--kl-base):
#   - every weight format (formats/: f32 bf16 bf16dot q8_0 q4_0 q4_k int8) at
#     --security none, so only the format differs from the base;
#   - every KV dtype --kv-dtype takes, at none with f32 weights;
#   - every protection level gelo compile -h lists, at its default weight
#     format, with --offload all (every linear op crosses; none and gelo-8x4
#     offload every op anyway), and exact and lwe also at --offload auto (on
#     --device local the cost model keeps every op in the TEE);
#   - every level with every weight format through gelo compile alone: each
#     combination it refuses gets a row with the refusal's message.
# Per row: perplexity +/- its standard error, mean KL divergence from the base
# +/- its error, max KL, top-1 agreement, the element type of the weights the
# device and the TEE multiply and how many of the plan's linear ops run on the
# device (read from gelo compile's IR with the same flags), and the run's wall
# time (the whole process: loading, compiling, scoring).
#
# Writes $OUT/quality.md and every run's output beside it.
#
# Environment (defaults in brackets):
#   GELO   gelo binary [built from this checkout into $OUT/gelo]
#   MODEL  model [models/trained]
#   TEXT   text to score [tools/train/data/heldout.txt]
#   CTX    window [256]
#   OUT    output directory [/tmp/gelo-quality/table]
#   KEY    session key of the masked levels (hex), fixed so a rerun draws the
#          same masks [000102...1f]
set -euo pipefail

cd "$(dirname "$0")/../.."
MODEL=${MODEL:-models/trained}
TEXT=${TEXT:-tools/train/data/heldout.txt}
CTX=${CTX:-256}
OUT=${OUT:-/tmp/gelo-quality/table}
KEY=${KEY:-000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f}
NICE=${NICE:-nice -n 10}
mkdir -p "$OUT"

. "$(dirname "$0")/lib.sh"
check_text
build_gelo

# The choices, read from gelo itself so a new format, dtype or level shows up.
# help_of VERB FLAG: the help line of a flag.
# (awk reads to the end: leaving early would end gelo by SIGPIPE, which
# pipefail turns into the script's exit.)
help_of() { "$GELO" "$1" -h 2>&1 | awk -v f="  -$2 " 'index($0, f) == 1 && !done { getline; print; done = 1 }'; }
LEVELS=$(help_of compile security | sed 's/.*protection level: //; s/, or custom.*//; s/ (insecure)//g; s/,//g')
KVS=$(help_of compile kv-dtype | sed 's/^[^:]*: //; s/ (.*//; s/, or / /; s/,//g; s/ or / /')
FORMATS="f32 bf16 bf16dot q8_0 q4_0 q4_k int8"
for f in $FORMATS; do
	help_of compile weights | grep -q "$f (" || die "gelo compile -h lists no weight format $f"
done
[ -n "$LEVELS" ] && [ -n "$KVS" ] || die "could not read the levels or KV dtypes from gelo compile -h"

common=(--model "$MODEL" --text "$TEXT" --ctx "$CTX" --session-key "$KEY")

# timed CMD...: run CMD; WALL is its wall time in seconds.
timed() {
	local t0 t1 rc=0
	t0=$(date +%s.%N)
	"$@" || rc=$?
	t1=$(date +%s.%N)
	WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	return $rc
}
# field FILE SED: the first capture of a sed expression.
field() { sed -n "$2" "$1" | tail -1; }
# plan_info ARGS...: "DEVICE-TYPE / TEE-TYPE|N of TOTAL" for a compile with
# these flags: the element types of the weights placed on each side of the
# prefill graph (- for none), and its linear ops on the device.
plan_info() {
	local ir
	ir=$("$GELO" compile --model "$MODEL" --session-key "$KEY" "$@" 2>/dev/null) || { echo "-|-"; return; }
	ir=$(sed -n '/^graph prefill/,/^}/p' <<<"$ir")
	local side types=()
	for side in device tee; do
		types+=("$(grep -E "= weight .* $side public\$" <<<"$ir" | sed 's/.* : \([a-z0-9_]*\)\[.*/\1/' | sort -u | paste -sd+ -)")
	done
	local dev
	dev=$(grep -cE "= (matmul|lm_head) .* device " <<<"$ir" || true)
	echo "${types[0]:--} / ${types[1]:--}|$dev of $LINEAR"
}

# Base: f32 weights, no protection, f32 log-probabilities (975 MB here). An
# f16 file is half that, but its rounding puts a floor of about 1e-9 nats
# under the mean KL (gelo-8x4 reads 1.6e-9 against it, 8.7e-13 against f32)
# and ties into the top-1 count: see docs/quality.md.
BASE=$OUT/base.logits
timed $NICE "$GELO" perplexity "${common[@]}" --security none --weights f32 \
	--save-logits "$BASE" --logits-dtype f32 >"$OUT/base.out" 2>"$OUT/base.err" ||
	die "base run failed: $(tail -1 "$OUT/base.err")"
base_wall=$WALL
LINEAR=$("$GELO" compile --model "$MODEL" --security none 2>/dev/null | sed -n '/^graph prefill/,/^}/p' | grep -cE '= (matmul|lm_head) ')

{
	echo "| group | flags | weights: device / TEE | linear ops on the device | PPL | mean KLD | max KLD | top-1 % | wall s |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	info=$(plan_info --security none --weights f32)
	echo "| base | \`--security none --weights f32\` | ${info%%|*} | ${info#*|} | $(field "$OUT/base.out" 's/^Final estimate: PPL = \([0-9.]*\) +\/- \([0-9.]*\)/\1 ± \2/p') | (base) | | | $base_wall |"
} >"$OUT/table.md"

# row GROUP FLAGS...: one run against the base, one table line.
row() {
	local group=$1
	shift
	local name
	name=$(echo "$group $*" | tr -c 'a-zA-Z0-9_\n' '_' | sed 's/__*/_/g')
	local out=$OUT/$name.out err=$OUT/$name.err
	local info
	info=$(plan_info "$@")
	if timed $NICE "$GELO" perplexity "${common[@]}" --kl-base "$BASE" "$@" >"$out" 2>"$err"; then
		local ppl kld mx top
		ppl=$(field "$out" 's/^Final estimate: PPL = \([0-9.]*\) +\/- \([0-9.]*\)/\1 ± \2/p')
		kld=$(field "$out" 's/^Mean    KLD: *\([-0-9.e+]*\) +\/- *\([-0-9.e+]*\)/\1 ± \2/p')
		mx=$(field "$out" 's/^Maximum KLD: *\([-0-9.e+]*\)/\1/p')
		top=$(field "$out" 's/^Same top p : *\([0-9.]*\) +\/- *\([0-9.]*\) %/\1 ± \2/p')
		echo "| $group | \`$*\` | ${info%%|*} | ${info#*|} | $ppl | $kld | $mx | $top | $WALL |" >>"$OUT/table.md"
	else
		local msg
		msg=$(grep -v '^INSECURE' "$err" | tail -1 | sed 's/|/\\|/g')
		echo "| $group | \`$*\` | refused | | $msg | | | | $WALL |" >>"$OUT/table.md"
	fi
	echo "run.sh: $group $*: done in $WALL s" >&2
}

for f in $FORMATS; do
	row format --security none --weights "$f"
done
for k in $KVS; do
	[ "$k" = f32 ] && continue # the base
	row kv --security none --weights f32 --kv-dtype "$k"
done
for l in $LEVELS; do
	row level --security "$l" --offload all
done
for l in exact lwe; do
	row "level, auto" --security "$l" --offload auto
done
# refused LEVEL FORMAT: a row for a combination gelo compile refuses.
refused() {
	local msg
	if msg=$("$GELO" compile --model "$MODEL" --security "$1" --offload all --weights "$2" 2>&1 >/dev/null); then
		return
	fi
	msg=$(grep -v '^INSECURE' <<<"$msg" | tail -1 | sed 's/|/\\|/g')
	echo "| refused | \`--security $1 --offload all --weights $2\` | | | $msg | | | | |" >>"$OUT/table.md"
}
for l in $LEVELS; do
	for f in $FORMATS; do
		refused "$l" "$f"
	done
done

{
	echo "# gelo quality table"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; gelo $(git rev-parse --short HEAD)."
	echo "Model $MODEL; text $TEXT ($(field "$OUT/base.err" 's/^perplexity: [^,]*, \([0-9]*\) tokens, \(.*\), batch.*/\1 tokens, \2/p')); --ctx $CTX."
	echo "Every row: \`gelo perplexity --model $MODEL --text $TEXT --ctx $CTX --session-key KEY --kl-base base.logits FLAGS\`."
	echo
	cat "$OUT/table.md"
} >"$OUT/quality.md"
cat "$OUT/quality.md"
