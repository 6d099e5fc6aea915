#!/usr/bin/env bash
# Side by side: gelo's CPU engine against llama.cpp on the same synthetic
# model, exported by gelo as GGUF. Not part of CI (it builds llama.cpp and
# takes tens of minutes on 2 cores). See README.md.
#
#   bench/llamacpp/run.sh [MODEL] [FORMATS] [ROUNDS]
#   defaults: qwen3-0.6b "f32 bf16 q8_0 q4_0" 3
#
# Environment: LLAMA_DIR (a llama.cpp checkout; built here if it has no
# build/bin/llama-bench), WORK (scratch, default /tmp/gelo-llamacpp),
# THREADS (default: nproc), KV (the KV cache type of both engines: f16,
# llama.cpp's default, or f32 or bf16; default f16), TOKENIZER (a tokenizer.json or its directory,
# written into the GGUF files: llama.cpp refuses a file without one;
# default ../shared/tokenizers/qwen3 beside the checkout), LLAMA_CMAKE
# (llama.cpp's ISA flags, default -DGGML_NATIVE=ON; see README.md for the
# Intel Xeon kind, where the native build's AMX kernels die).
set -euo pipefail
model=${1:-qwen3-0.6b}
formats=${2:-"f32 bf16 q8_0 q4_0"}
rounds=${3:-3}
work=${WORK:-/tmp/gelo-llamacpp}
threads=${THREADS:-$(nproc)}
kv=${KV:-f16}
root=$(cd "$(dirname "$0")/../.." && pwd)
tok=${TOKENIZER:-$root/../shared/tokenizers/qwen3}
mkdir -p "$work"

llama=${LLAMA_DIR:-$work/llama.cpp}
if [ ! -x "$llama/build/bin/llama-bench" ]; then
  if [ ! -d "$llama" ]; then
    # llama.cpp's own release, as shipped (a git bundle) in node-llama-cpp.
    (cd "$work" && npm pack node-llama-cpp@3.21.1 >/dev/null &&
      tar xzf node-llama-cpp-3.21.1.tgz &&
      git clone -q package/llama/gitRelease.bundle llama.cpp)
  fi
  # shellcheck disable=SC2086 # LLAMA_CMAKE is a list of flags
  cmake -S "$llama" -B "$llama/build" -DCMAKE_BUILD_TYPE=Release \
    ${LLAMA_CMAKE:--DGGML_NATIVE=ON} -DLLAMA_CURL=OFF -DGGML_METAL=OFF -DGGML_CUDA=OFF >/dev/null
  cmake --build "$llama/build" --target llama-bench -j "$threads" >/dev/null
fi

(cd "$root" && go build -o "$work/gelo" ./cmd/gelo)
# gelo's bf16dot (the bf16 dot product, a speed mode) is compared with
# llama.cpp's bf16 file, which llama.cpp multiplies the same way.
gguf_of() { echo "${1%dot}"; }
for f in $formats; do
  g=$(gguf_of "$f")
  [ -f "$work/$model-$g.gguf" ] || "$work/gelo" export --model "$model" --gguf "$work/$model-$g.gguf" --type "$g" --tokenizer "$tok"
done

# Interleaved rounds: every format on both engines per round; take the
# medians over rounds (gelo prints TTFT and TPOT per level and length).
# A run starts its results afresh: llama.csv is appended to round by round,
# and an earlier run's rows (or its higher rounds' gelo files) left in WORK
# would otherwise enter this run's medians.
rm -f "$work/llama.csv" "$work"/gelo-[0-9]*-*.txt
for r in $(seq 1 "$rounds"); do
  for f in $formats; do
    g=$(gguf_of "$f")
    # bf16dot's llama.cpp run is bf16's when that format is listed too.
    if [ "$g" = "$f" ] || ! echo " $formats " | grep -q " $g "; then
      echo "== round $r $f llama.cpp" >&2
      # -d 0,512: decode (tg64) from an empty context and after 512 tokens,
      # the depths gelo's two runs below decode at.
      "$llama/build/bin/llama-bench" -m "$work/$model-$g.gguf" -t "$threads" -p 128,512 -n 64 -d 0,512 -r 1 -ctk "$kv" -ctv "$kv" -o csv \
        | tail -n +2 | sed "s/^/round=$r,/" >> "$work/llama.csv"
    fi
    echo "== round $r $f gelo" >&2
    # The built-in variant is the exported model (same seed; the export's
    # blocks are what --weights computes from the same f32 values). The
    # masks suite decodes after its last prompt: 512 tokens here, 8 in the
    # second run.
    "$work/gelo" bench --model "$model" --weights "$f" --workers "$threads" --kv-dtype "$kv" --suite masks --masks none,exact --prefill 128,512 --decode 64 \
      > "$work/gelo-$r-$f.txt"
    "$work/gelo" bench --model "$model" --weights "$f" --workers "$threads" --kv-dtype "$kv" --suite masks --masks none,exact --prefill 8 --decode 64 \
      > "$work/gelo-$r-$f-d8.txt"
  done
done
echo "KV cache: $kv on both engines" | tee "$work/summary.txt"
python3 "$root/bench/llamacpp/summary.py" "$work" | tee -a "$work/summary.txt"
