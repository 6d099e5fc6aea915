#!/usr/bin/env bash
# tools/quality/llamacpp.sh: cross-check gelo perplexity against llama.cpp's
# llama-perplexity on the same GGUF files (issue 51). Not run in CI: it needs a
# llama.cpp build tree and the held-out text of tools/train/corpus.sh.
#
# For each tensor type gelo export writes (f32, bf16, f16, q8_0, q4_0, q4_k) it
# exports models/trained to GGUF, runs llama-perplexity on it (-c CTX -b CTX
# --chunks N, N the whole windows of the text) and gelo perplexity on the very
# same file, once with the file dequantized to f32 (gelo's default for a GGUF
# file) and once in the file's own format (--weights TYPE, the kernels llama.cpp
# runs: q8_0 activation blocks against q8_0/q4_0/q4_K weights; bf16dot for a
# bf16 file, whose rows llama.cpp rounds to bf16). Against each engine's own f32
# base it also reports the mean KL and top-1 agreement (llama-perplexity
# --kl-divergence, gelo --kl-base). Before any of that it checks that both
# tokenize the text to the same ids (llama-tokenize against gelo's count and the
# ids of every token gelo scores) and that both score the same number of windows.
#
# Writes $OUT/llamacpp.md (a markdown table) and the raw outputs beside it.
#
# Environment (defaults in brackets):
#   LLAMA_BUILD  llama.cpp build tree [/tmp/llsrv/llama.cpp/build]
#   GELO         gelo binary [built from this checkout into $OUT/gelo]
#   MODEL        model directory [models/trained]
#   TEXT         text to score [tools/train/data/heldout.txt]
#   CTX          window [256]
#   THREADS      llama.cpp threads [2]
#   TYPES        export types [f32 bf16 f16 q8_0 q4_0 q4_k]
#   OUT          output directory [/tmp/gelo-quality/llamacpp]
set -euo pipefail

cd "$(dirname "$0")/../.."
LLAMA_BUILD=${LLAMA_BUILD:-/tmp/llsrv/llama.cpp/build}
MODEL=${MODEL:-models/trained}
TEXT=${TEXT:-tools/train/data/heldout.txt}
CTX=${CTX:-256}
THREADS=${THREADS:-2}
TYPES=${TYPES:-f32 bf16 f16 q8_0 q4_0 q4_k}
OUT=${OUT:-/tmp/gelo-quality/llamacpp}
NICE=${NICE:-nice -n 10}
mkdir -p "$OUT"

. "$(dirname "$0")/lib.sh"
check_text
build_gelo
$NICE cmake --build "$LLAMA_BUILD" --target llama-perplexity llama-tokenize -j"$THREADS" >"$OUT/cmake.log" 2>&1 ||
	die "building llama-perplexity in $LLAMA_BUILD failed (see $OUT/cmake.log)"
LP=$LLAMA_BUILD/bin/llama-perplexity
LT=$LLAMA_BUILD/bin/llama-tokenize
LLAMA_DIR=$(cd "$LLAMA_BUILD/.." && pwd)
LLAMA_COMMIT=$(git -C "$LLAMA_DIR" log -1 --format='%h %s' 2>/dev/null || echo unknown)

# ppl FILE: "PPL +/- ERR" from a "Final estimate" line (both tools print it).
ppl() { sed -n 's/.*Final estimate: PPL = \([0-9.]*\) +\/- \([0-9.]*\).*/\1 ± \2/p' "$1" | tail -1; }
# pplv FILE: the PPL value alone.
pplv() { ppl "$1" | cut -d' ' -f1; }
# kld FILE: mean KLD (gelo: "Mean    KLD: x +/- e"; llama.cpp: "Mean    KLD: x ± e").
kld() { sed -n 's/^.*Mean    KLD: *\([-0-9.e+]*\).*/\1/p' "$1" | tail -1; }
# top1 FILE: "Same top p" percentage.
top1() { sed -n 's/^.*Same top p *: *\([0-9.]*\).*/\1/p' "$1" | tail -1; }
# rel A B: |A - B| / B.
rel() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; printf "%.1e", d / b }'; }

# 1. Export every type.
for t in $TYPES; do
	"$GELO" export --model "$MODEL" --gguf "$OUT/trained-$t.gguf" --type "$t" >"$OUT/export-$t.log" 2>&1 ||
		die "gelo export --type $t failed: $(tail -1 "$OUT/export-$t.log")"
done
first=$(set -- $TYPES; echo "$1")

# 2. Tokenization: llama.cpp's ids against gelo's count and scored tokens.
"$LT" -m "$OUT/trained-$first.gguf" -f "$TEXT" --ids --log-disable 2>/dev/null >"$OUT/llama.ids"
ntok_llama=$(python3 -c 'import ast,sys; print(len(ast.literal_eval(open(sys.argv[1]).read().strip())))' "$OUT/llama.ids")
chunks=$((ntok_llama / CTX))
# tools/tokprune wrote the held-out text's ids as gelo's tokenizer encodes it
# (uint16): when they are there, every id is compared, not just the scored ones.
ids_check="no full id list"
ids_file=${TEXT%.txt}.ids
if [ -f "$ids_file" ]; then
	ids_check=$(python3 - "$OUT/llama.ids" "$ids_file" <<'EOF'
import ast, struct, sys
ll = ast.literal_eval(open(sys.argv[1]).read().strip())
b = open(sys.argv[2], 'rb').read()
g = struct.unpack('<%dH' % (len(b) // 2), b)
bad = sum(1 for x, y in zip(ll, g) if x != y) + abs(len(ll) - len(g))
print(f"all {len(g)} ids of {sys.argv[2]} (gelo's tokenizer, written by tools/tokprune): {bad} differ")
EOF
)
	case "$ids_check" in *": 0 differ") ;; *) die "$ids_check" ;; esac
fi

# 3. Base runs (f32 file): llama.cpp saves its KL base, gelo its logits.
$NICE "$LP" -m "$OUT/trained-f32.gguf" -f "$TEXT" -c "$CTX" -b "$CTX" -t "$THREADS" --chunks "$chunks" \
	--kl-divergence-base "$OUT/llama-f32.kld" >"$OUT/llama-f32.out" 2>&1 ||
	die "llama-perplexity on the f32 file: $(tail -1 "$OUT/llama-f32.out")"
ppl_ll_base=$(pplv "$OUT/llama-f32.out")
[ -n "$ppl_ll_base" ] || die "llama-perplexity on the f32 file printed no estimate (see $OUT/llama-f32.out)"
$NICE "$GELO" perplexity --model "$OUT/trained-f32.gguf" --text "$TEXT" --ctx "$CTX" --security none \
	--save-logits "$OUT/gelo-f32.logits" >"$OUT/gelo-f32.out" 2>"$OUT/gelo-f32.err"
ntok_gelo=$(sed -n 's/^perplexity: .*, \([0-9]*\) tokens, .*/\1/p' "$OUT/gelo-f32.err")
[ "$ntok_gelo" = "$ntok_llama" ] || die "token counts differ: gelo $ntok_gelo, llama.cpp $ntok_llama"
# Every token gelo scored (the saved file's records) against llama.cpp's id at
# that position: window w scores positions w*CTX + CTX/2 + 1 .. w*CTX + CTX - 1.
scored_check=$(python3 - "$OUT/llama.ids" "$OUT/gelo-f32.logits" "$CTX" "$chunks" <<'EOF'
import ast, struct, sys
ids = ast.literal_eval(open(sys.argv[1]).read().strip())
ctx, nw = int(sys.argv[3]), int(sys.argv[4])
with open(sys.argv[2], 'rb') as f:
    head = f.read(32)
    dtype, vocab = struct.unpack_from('<II', head, 12)  # eval/logits.go's header
    rec = 4 + vocab * (4 if dtype == 1 else 2)
    got = []
    while True:
        r = f.read(rec)
        if len(r) < rec:
            break
        got.append(struct.unpack_from('<i', r)[0])
want = [ids[w * ctx + j + 1] for w in range(nw) for j in range(ctx // 2, ctx - 1)]
bad = sum(1 for a, b in zip(got, want) if a != b)
print(f"{len(got)} scored, {len(want)} expected, {bad} differ")
EOF
)
case "$scored_check" in
*" 0 differ") ;;
*) die "scored tokens: $scored_check" ;;
esac
case "$scored_check" in
"$((chunks * (CTX - 1 - CTX / 2))) scored"*) ;;
*) die "scored tokens: $scored_check, want $((chunks * (CTX - 1 - CTX / 2)))" ;;
esac

# 4. Every type: llama.cpp and gelo on the same file. llama.cpp's PPL comes
# from its --kl-divergence run ("Mean PPL(Q)", the same sum as its plain run's
# "Final estimate"); a nonzero exit of it is noted in the row.
{
	echo "| GGUF type | llama-perplexity PPL | gelo, file as f32 | gelo, file's format | \\|dPPL\\|/PPL (as f32 / own format) | mean KLD vs f32: llama.cpp / gelo | top-1 % vs f32: llama.cpp / gelo |"
	echo "| --- | --- | --- | --- | --- | --- | --- |"
} >"$OUT/table.md"
for t in $TYPES; do
	f=$OUT/trained-$t.gguf
	own=$t
	case $t in f32 | f16) own= ;; bf16) own=bf16dot ;; esac
	note=
	if [ "$t" = f32 ]; then
		cp "$OUT/llama-f32.out" "$OUT/llama-$t.kl.out"
	else
		rc=0
		$NICE "$LP" -m "$f" -f "$TEXT" -c "$CTX" -b "$CTX" -t "$THREADS" --chunks "$chunks" \
			--kl-divergence-base "$OUT/llama-f32.kld" --kl-divergence >"$OUT/llama-$t.kl.out" 2>&1 || rc=$?
		[ "$rc" = 0 ] || note=" (llama-perplexity exited $rc after its last line: $(grep -v '^$' "$OUT/llama-$t.kl.out" | tail -1 | sed 's/|/\\|/g'))"
	fi
	pll=$(sed -n 's/^.*Mean PPL(Q) *: *\([0-9.]*\) ± *\([0-9.]*\).*/\1 ± \2/p' "$OUT/llama-$t.kl.out")
	[ -n "$pll" ] || pll=$(ppl "$OUT/llama-$t.kl.out")
	[ -n "$pll" ] || die "llama-perplexity on $f printed no estimate (see $OUT/llama-$t.kl.out)"
	$NICE "$GELO" perplexity --model "$f" --text "$TEXT" --ctx "$CTX" --security none \
		--kl-base "$OUT/gelo-f32.logits" >"$OUT/gelo-$t.out" 2>"$OUT/gelo-$t.err" ||
		die "gelo perplexity on $f: $(tail -1 "$OUT/gelo-$t.err")"
	g32=$(ppl "$OUT/gelo-$t.out")
	gown=- relown=- kg=$(kld "$OUT/gelo-$t.out") tg=$(top1 "$OUT/gelo-$t.out")
	if [ -n "$own" ]; then
		$NICE "$GELO" perplexity --model "$f" --text "$TEXT" --ctx "$CTX" --security none --weights "$own" \
			--kl-base "$OUT/gelo-f32.logits" >"$OUT/gelo-$t-$own.out" 2>"$OUT/gelo-$t-$own.err" ||
			die "gelo perplexity --weights $own on $f: $(tail -1 "$OUT/gelo-$t-$own.err")"
		gown="$(ppl "$OUT/gelo-$t-$own.out") ($own)"
		relown=$(rel "$(pplv "$OUT/gelo-$t-$own.out")" "${pll%% *}")
		kg=$(kld "$OUT/gelo-$t-$own.out") tg=$(top1 "$OUT/gelo-$t-$own.out")
	fi
	kl=$(kld "$OUT/llama-$t.kl.out") tl=$(top1 "$OUT/llama-$t.kl.out")
	[ "$t" = f32 ] && kl=0 tl=100
	echo "| $t | $pll$note | $g32 | $gown | $(rel "$(pplv "$OUT/gelo-$t.out")" "${pll%% *}") / $relown | ${kl:--} / ${kg:--} | ${tl:--} / ${tg:--} |" >>"$OUT/table.md"
done

{
	echo "# gelo perplexity against llama-perplexity"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores."
	echo "llama.cpp $LLAMA_COMMIT ($LLAMA_BUILD); gelo $(git rev-parse --short HEAD)."
	echo "Text: $TEXT, $ntok_llama tokens by both tokenizers; llama-tokenize's ids against gelo's:"
	echo "$ids_check; scored tokens of gelo's f32 run: $scored_check."
	echo "$chunks windows of $CTX; both score rows CTX/2 .. CTX-2 of each window (the next token's log-probability)."
	echo "Each engine's KL is against its own f32 run. llama.cpp's --kl-divergence reads its base's"
	echo "perplexity back from its 16-bit log-probability file as $(sed -n 's/^Mean PPL(base) *: *\([0-9.]*\).*/\1/p' "$OUT"/llama-*.kl.out | sed -n 1p)"
	echo "(its f32 run printed $(pplv "$OUT/llama-f32.out")); gelo's base file holds f32 log-probabilities."
	echo
	cat "$OUT/table.md"
} >"$OUT/llamacpp.md"
cat "$OUT/llamacpp.md"
