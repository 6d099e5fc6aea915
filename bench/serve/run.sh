#!/usr/bin/env bash
# Loopback load run of gelo serve (and, when LLAMA_SERVER is set, of
# llama-server on the same GGUF file and load): 1, 8 and 32 concurrent
# streaming clients, slow readers and stalled request bodies beside them;
# tok/s, TTFT p50/p95, errors and the server's peak RSS per level. Not part
# of CI. See README.md.
#
#   bench/serve/run.sh [MODEL] [CLIENTS]
#   defaults: qwen3-tiny "1,8,32"
#
# Environment: GELO_BIN (a gelo binary; default: built from this tree),
# LLAMA_SERVER (a llama-server binary; MODEL must then be a .gguf file),
# GELO_FLAGS (more gelo serve flags: a GGUF file's own format is
# --weights q8_0 etc., gelo's default being f32), MAX_TOKENS (default 64), PROMPT_LEN (default 64), SLOW (slow readers,
# default 2), STALLED (stalled bodies, default 50), REQUESTS (per client
# and level, default 2), WORK (scratch, default /tmp/gelo-serve-bench).
set -euo pipefail
model=${1:-qwen3-tiny}
clients=${2:-1,8,32}
max_tokens=${MAX_TOKENS:-64}
prompt_len=${PROMPT_LEN:-64}
work=${WORK:-/tmp/gelo-serve-bench}
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$work"
maxb=$(echo "$clients" | tr ',' '\n' | sort -n | tail -1)
ctx=$((prompt_len + max_tokens + 8))

gelo=${GELO_BIN:-}
if [ -z "$gelo" ]; then
  gelo=$work/gelo
  (cd "$root" && go build -o "$gelo" ./cmd/gelo)
fi
(cd "$root" && go build -o "$work/loadgen" ./bench/serve/loadgen)

# wait_up URL: until /health answers 200 (60 s at most).
wait_up() {
  for _ in $(seq 600); do
    if [ "$(curl -s -o /dev/null -w '%{http_code}' "$1/health" || true)" = 200 ]; then return 0; fi
    sleep 0.1
  done
  echo "run.sh: $1 did not come up" >&2
  return 1
}

# load NAME PID URL: the run, its output kept in $work/NAME.txt.
load() {
  echo "== $1"
  "$work/loadgen" --url "$3" --pid "$2" --clients "$clients" --max-tokens "$max_tokens" --prompt-len "$prompt_len" \
    --slow "${SLOW:-2}" --stalled "${STALLED:-50}" --requests "${REQUESTS:-2}" | tee "$work/$1.txt"
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "model: $model; --max-batch $maxb, --max-context $ctx"
port=18090
# shellcheck disable=SC2086 # GELO_FLAGS is a list of flags
"$gelo" serve --model "$model" --plain-http --listen 127.0.0.1:$port --max-batch "$maxb" --max-context "$ctx" \
  --drain-timeout 5s ${GELO_FLAGS:-} >"$work/gelo-serve.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
wait_up http://127.0.0.1:$port
load gelo $pid http://127.0.0.1:$port
kill -TERM $pid
wait $pid || echo "gelo serve exited with $? after SIGTERM" >&2

if [ -n "${LLAMA_SERVER:-}" ]; then
  port=18091
  "$LLAMA_SERVER" -m "$model" --host 127.0.0.1 --port $port -np "$maxb" -c $((ctx * maxb)) -t "$(nproc)" \
    >"$work/llama-server.log" 2>&1 &
  lpid=$!
  trap 'kill $lpid 2>/dev/null || true' EXIT
  wait_up http://127.0.0.1:$port
  load llama-server $lpid http://127.0.0.1:$port
  kill -TERM $lpid
  wait $lpid || true
fi
