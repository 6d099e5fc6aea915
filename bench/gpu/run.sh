#!/usr/bin/env bash
# run.sh: gelo's device paths on a lent GPU (XLA through PJRT's CUDA plugin,
# Vulkan on the NVIDIA driver), in one call of the device tool, most
# important figures first so that a run cut short still returns them:
#
#   1. parity: greedy tokens of every GPU path against the cpu backend's
#      (CLI, 64 steps), then the logit-level parity tests (test binaries)
#   2. speed of the plain accelerator: TTFT and TPOT (B = 1) and batched
#      decode of the whole forward on XLA and on Vulkan, the cpu backend on
#      the same machine's CPU as the baseline, at the 0.6B widths (2 layers)
#      and the 4B widths (2 layers, bf16 and q8_0)
#   1b. the lwe level's product on the gomlx device (MatMulU32 on XLA):
#      bit-exact against lwe.MulRef, then its time against the float
#      product on the same int8 weight
#   3. offload under protection: the cost of a crossing on the real device
#      (bench --suite device) for every device
#
# Results: $OUT/summary.txt (one line a check or figure, appended as they
# come), $OUT/logs.tgz (every command's output, re-packed after each step)
# and $OUT/env.txt. On the device machine:
#
#   bench/gpu/run.sh                 (carry ["bench/gpu/carry"], from prepare.sh)
#
# Here, as a dry run on the CPU (gomlx's go engine in place of XLA, Vulkan
# on lavapipe, qwen3-tiny only, short runs), so the script cannot rot between
# the rare lent runs (TestDryRun runs this):
#
#   GELO_GPU_MODE=dry GELO_BIN=/path/to/gelo OUT=/tmp/out bench/gpu/run.sh
#
# Environment: GELO_GPU_MODE (gpu | dry), GELO_BIN (a gelo binary instead
# of carry/gelo.tgz's), PJRT_PLUGIN (the CUDA plugin's .so; default: found
# in the image's Python packages), GELO_GPU_BUDGET_S (seconds the whole run
# may take, default 450), WORK (scratch, default /tmp/gelo-gpu).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mode=${GELO_GPU_MODE:-gpu}
out=${OUT:?set OUT to the folder the results go to}
work=${WORK:-/tmp/gelo-gpu}
budget=${GELO_GPU_BUDGET_S:-450}
start=$(date +%s)
mkdir -p "$out" "$work/logs"
summary=$out/summary.txt
: >"$summary"

say() { echo "$*" | tee -a "$summary"; }
left() { echo $((budget - ($(date +%s) - start))); }
die() {
	say "FAILED: $*"
	exit 1
}
pack() { tar -C "$work" -czf "$out/logs.tgz" logs 2>/dev/null; }

case $mode in
gpu)
	xdev=gomlx:xla:cuda xfwd=xla:cuda
	models=(tiny m06)
	;;
dry)
	xdev=gomlx:go xfwd=go
	models=(tiny)
	;;
*) die "GELO_GPU_MODE=$mode: want gpu or dry" ;;
esac

# --- binaries
if [ -n "${GELO_BIN:-}" ]; then
	gelo=$GELO_BIN
	bin=$(dirname "$gelo")
else
	[ -f "$here/carry/gelo.tgz" ] || die "no $here/carry/gelo.tgz: run bench/gpu/prepare.sh here and carry bench/gpu/carry"
	tar -C "$work" -xzf "$here/carry/gelo.tgz" || die "unpack carry/gelo.tgz"
	bin=$work/bin
	gelo=$bin/gelo
fi
[ -x "$gelo" ] || die "no gelo binary at $gelo"

# --- environment: the GPU, the PJRT plugin, the Vulkan loader
{
	echo "mode $mode; started $(date -u +%FT%TZ); budget ${budget}s"
	cat "$here/carry/BUILD" 2>/dev/null
	uname -a
	nproc
	nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
} >"$out/env.txt"
say "gelo GPU run ($mode): $(head -1 "$here/carry/BUILD" 2>/dev/null || echo "binary $gelo")"
if [ "$mode" = gpu ]; then
	say "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"
	plugin=${PJRT_PLUGIN:-$(python3 - <<'PY' 2>/dev/null
import glob, importlib.util, os
for name in ("jax_plugins.xla_cuda13", "jax_plugins.xla_cuda12"):
    spec = importlib.util.find_spec(name)
    for d in (spec.submodule_search_locations or []) if spec else []:
        for f in sorted(glob.glob(os.path.join(d, "*plugin*.so"))):
            print(f)
            raise SystemExit
PY
)}
	[ -f "$plugin" ] || die "no PJRT CUDA plugin found in the image's Python packages (jax_plugins.xla_cuda13/12): set PJRT_PLUGIN to its .so"
	mkdir -p "$work/pjrt"
	ln -sf "$plugin" "$work/pjrt/pjrt_c_api_cuda_plugin.so"
	export PJRT_PLUGIN_LIBRARY_PATH=$work/pjrt
	# The plugin loads CUDA's libraries from the nvidia-* wheels.
	nv=$(python3 -c 'import nvidia, os; print(":".join(sorted(d for p in nvidia.__path__ for d in __import__("glob").glob(os.path.join(p, "*", "lib")))))' 2>/dev/null)
	export LD_LIBRARY_PATH=${nv}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	say "pjrt: $plugin"
	if ! ldconfig -p | grep -q libvulkan.so.1; then
		[ -d "$here/carry/gl" ] || die "no Vulkan loader on this machine and no carry/gl debs (prepare.sh without NO_DEBS=1)"
		for f in "$here"/carry/gl/*.deb; do dpkg -x "$f" /; done
		ldconfig
	fi
	if [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
		export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
	fi
fi
export GELO_REQUIRE_VULKAN=1
pack

# step NAME SECONDS CMD...: runs CMD with its output in logs/NAME.log, at
# most SECONDS and never past the budget; returns CMD's status.
step() {
	local name=$1 limit=$2
	shift 2
	local l
	l=$(($(left) - 5))
	[ "$l" -lt "$limit" ] && limit=$l
	if [ "$limit" -le 0 ]; then
		say "skipped $name: the budget is spent"
		return 124
	fi
	local t0=$(date +%s)
	echo "\$ $*" >"$work/logs/$name.log"
	timeout "$limit" "$@" >>"$work/logs/$name.log" 2>&1
	local rc=$?
	[ $rc -ne 0 ] && say "step $name: exit $rc after $(($(date +%s) - t0))s (logs/$name.log: $(tail -1 "$work/logs/$name.log" | cut -c1-200))"
	pack
	return $rc
}

# tokens LOG: the generated ids, the first line of ids only.
tokens() { grep -m1 -E '^[0-9]+( [0-9]+)* ?$' "$1"; }

# --- models: qwen3-tiny is built in; the 0.6B and 4B widths with 2 layers
# are written here (synthetic, deterministic).
declare -A model=([tiny]=qwen3-tiny)
if [ "$mode" = gpu ]; then
	step synth-m06 120 "$gelo" synth --variant qwen3-0.6b --layers 2 --out "$work/m06" && model[m06]=$work/m06
	step synth-m4b 180 "$gelo" synth --variant qwen3-4b --layers 2 --out "$work/m4b" && model[m4b]=$work/m4b
fi

# --- 1. parity: greedy tokens against the cpu backend's, 64 steps
prompt=3,14,15,92,65,35,89,79,32,38,46,26,43,38,32,79
parity() { # NAME REF-LOG ARGS...
	local name=$1 ref=$2
	shift 2
	if ! step "$name" 180 "$gelo" generate --prompt-ids "$prompt" --max-tokens 64 "$@"; then
		say "parity $name: FAILED to run"
		return
	fi
	local want got
	want=$(tokens "$work/logs/$ref.log")
	got=$(tokens "$work/logs/$name.log")
	if [ -n "$want" ] && [ "$want" = "$got" ]; then
		say "parity $name: identical to cpu ($(echo "$got" | wc -w) tokens)"
	else
		say "parity $name: DIFFERS from cpu: got [$got] want [$want]"
	fi
}
for m in "${models[@]}"; do
	[ -n "${model[$m]:-}" ] || continue
	mm=(--model "${model[$m]}")
	# lwe with every op offloaded: the ciphertext product on the GPU (the
	# default level offloads only what pays, nothing at these widths).
	for lvl in none gelo-8x4 lwe; do
		la=(--security "$lvl")
		[ "$lvl" = lwe ] && la+=(--offload all)
		step "gen-$m-$lvl-cpu" 180 "$gelo" generate --prompt-ids "$prompt" --max-tokens 64 "${mm[@]}" "${la[@]}" ||
			say "parity $m $lvl: the cpu reference failed"
		for dev in "$xdev" vulkan; do
			parity "gen-$m-$lvl-${dev//:/_}" "gen-$m-$lvl-cpu" "${mm[@]}" "${la[@]}" --device "$dev"
		done
	done
	parity "gen-$m-none-fwd-gomlx" "gen-$m-none-cpu" "${mm[@]}" --security none --backend gomlx --gomlx-backend "$xfwd"
	parity "gen-$m-none-fwd-vulkan" "gen-$m-none-cpu" "${mm[@]}" --security none --backend vulkan
done
if [ "$mode" = gpu ]; then
	# Logits within the stated tolerances: the parity tests on the GPU
	# engines (GELO_GOMLX_FORWARD and the CUDA parity test name XLA's CUDA
	# plugin; Vulkan finds the NVIDIA driver).
	export GELO_GOMLX_FORWARD=$xfwd
	step tests-parity 240 "$bin/tests.test" -test.v -test.short \
		-test.run 'TestGomlxCUDAParity|TestGomlxForwardParity|TestVulkanParity$|TestVulkanForwardParity'
	say "parity tests: $(grep -cE '^(    )?--- PASS' "$work/logs/tests-parity.log") passed, $(grep -cE '^(    )?--- FAIL' "$work/logs/tests-parity.log") failed, $(grep -cE '^(    )?--- SKIP' "$work/logs/tests-parity.log") skipped"
	grep -E 'max logit deviation|--- (FAIL|SKIP)' "$work/logs/tests-parity.log" | head -20 | tee -a "$summary"
fi

# --- 1b. the lwe level's device product on the gomlx device (MatMulU32: each
# u32 word as four int8 limbs, limb products in int32 or in exact float32
# chunks, wrapping recombination): word for word against lwe.MulRef on
# XLA's CUDA plugin in both forms, then their times against the float
# product on the same resident int8 weight (4096 x 4096, m = 1, 64, 512).
# The dry run checks the same on the go engine, small.
if [ "$mode" = gpu ]; then
	lat=xla:cuda latargs=(-test.benchtime 20x)
else
	lat=go latargs=(-test.short -test.benchtime 3x)
fi
if [ -x "$bin/lower_gomlx.test" ]; then
	step lattice-u32 150 env GELO_GOMLX_U32=$lat "$bin/lower_gomlx.test" -test.v \
		-test.run 'TestMatMulU32Backend$' -test.bench 'BenchmarkMatMulU32$' "${latargs[@]}"
	log=$work/logs/lattice-u32.log
	if grep -q '^--- PASS: TestMatMulU32Backend' "$log"; then
		say "lattice u32 $lat: bit-exact against lwe.MulRef ($(grep -cE '^    --- PASS: TestMatMulU32Backend/' "$log") cases, int32 and f32 forms)"
		awk '$4 == "ns/op" && $1 ~ /^BenchmarkMatMulU32\// {
			split($1, a, "/"); k = a[4] " " a[5]; sub(/-[0-9]+$/, "", k)
			if (!(k in seen)) { seen[k] = 1; order[++n] = k }
			ns[a[3] " " k] = $3; rate[a[3] " " k] = $7 " " $8
		}
		END {
			for (i = 1; i <= n; i++) {
				k = order[i]; u = ns["u32 " k]; uf = ns["u32f32 " k]; f = ns["f32 " k]
				printf "lattice bench %s: u32 int32 form %s ns/op (%s), u32 f32 form %s ns/op (%s), f32 product %s ns/op (%s); time over the f32 product %.2f and %.2f\n",
					k, u, rate["u32 " k], uf, rate["u32f32 " k], f, rate["f32 " k], (f > 0 ? u / f : 0), (f > 0 ? uf / f : 0)
			}
		}' "$log" | tee -a "$summary"
	elif grep -q '^--- SKIP: TestMatMulU32Backend' "$log"; then
		say "lattice u32 $lat: NOT RUN: $(grep -A1 '^--- SKIP: TestMatMulU32Backend' "$log" | tail -1 | cut -c1-200)"
	else
		say "lattice u32 $lat: FAILED ($(grep -cE '^    --- FAIL: TestMatMulU32Backend/' "$log") cases differ; logs/lattice-u32.log)"
	fi
else
	say "lattice u32 $lat: FAILED: no $bin/lower_gomlx.test (prepare.sh builds it)"
fi

# --- 2. speed of the plain accelerator (whole forward), cpu as baseline
if [ "$mode" = gpu ]; then
	speed=(m06 m4b)
	pre=128,512,2048 dec=32 batches=(8 64)
else
	speed=(tiny)
	pre=16,32 dec=4 batches=(8)
fi
for m in "${speed[@]}"; do
	[ -n "${model[$m]:-}" ] || continue
	for w in bf16 q8_0; do
		[ "$m" != m4b ] && [ "$w" = q8_0 ] && continue
		for eng in "cpu" "gomlx --gomlx-backend $xfwd" "vulkan"; do
			name="speed-$m-$w-${eng%% *}"
			if [ "$eng" = vulkan ]; then
				# The Vulkan engine's bench is the device suite (one
				# prefill length a run): TTFT and TPOT against cpu.
				for n in ${pre//,/ }; do
					step "$name-n$n" 200 "$gelo" bench --suite device --backend vulkan --model "${model[$m]}" --weights "$w" \
						--security none --prefill "$n" --decode "$dec" &&
						say "speed $m $w n=$n: $(grep -E '^(cpu|vulkan) +[0-9]' "$work/logs/$name-n$n.log" | head -2 | tr -s ' ' | paste -sd ';')"
				done
			# shellcheck disable=SC2086 # eng is a backend and its flags
			elif step "$name" 200 "$gelo" bench --model "${model[$m]}" --weights "$w" --security none --masks none \
				--backend $eng --prefill "$pre" --decode "$dec"; then
				say "speed $m $w ${eng%% *} (TTFT n=$pre, TPOT, tok/s): $(grep -A1 -E '^mask +TTFT' "$work/logs/$name.log" | tail -1 | tr -s ' ')"
			fi
			for b in "${batches[@]}"; do
				# shellcheck disable=SC2086
				step "$name-b$b" 200 "$gelo" bench --suite batch --batch "$b" --model "${model[$m]}" --weights "$w" \
					--security none --masks none --backend $eng --decode "$dec" &&
					say "batch $m $w ${eng%% *} B=$b: $(grep -E '^none ' "$work/logs/$name-b$b.log" | tail -1 | tr -s ' ')"
			done
		done
	done
done

# --- 3. offload under protection: a crossing's cost on each device
for m in "${speed[@]}"; do
	[ -n "${model[$m]:-}" ] || continue
	for dev in "$xdev" vulkan; do
		name="device-$m-${dev//:/_}"
		step "$name" 200 "$gelo" bench --suite device --device "$dev" --model "${model[$m]}" --security gelo-8x4 \
			--prefill "${pre##*,}" --decode "$dec" &&
			sed -n '/^device suite/,/^(timings/p' "$work/logs/$name.log" | tee -a "$summary"
	done
	name="device-$m-fwd-vulkan"
	step "$name" 200 "$gelo" bench --suite device --backend vulkan --model "${model[$m]}" --security none \
		--prefill "${pre##*,}" --decode "$dec" &&
		sed -n '/^device suite/,/^(timings/p' "$work/logs/$name.log" | tee -a "$summary"
done
say "done in $(($(date +%s) - start))s"
pack
