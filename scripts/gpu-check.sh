#!/usr/bin/env bash
# One command for the H200: configure and build in a fresh directory, run ctest (the gpu label
# included), compute-sanitizer memcheck and racecheck over the GPU tests, and the PyTorch
# side-by-side benchmark. Logs and JSON go under $OUT; a short table ends the output.
#   OUT=/tmp/out bash scripts/gpu-check.sh [--quick]   (--quick: blog shape only in the benchmark)
# Switches (environment): TIMELINE=1 (bench/flash_timeline at the anchors; TIMELINE_SHAPES), TESTS_WITH_SANITIZER=1, SKIP_TESTS=1, SKIP_COMPARE=1, SKIP_SANITIZER=1, SKIP_BENCH=1, SKIP_CTEST=1, CPU_BENCH=1 (PyTorch's CPU SDPA
# beside ours on this machine's Xeon, issue 9), BENCH_VARIANTS, BENCH_SHAPES, ATTNPROF_GPU_BUILD, TESTS_GPU_FILTER
# (a gtest filter for the GPU tests when they run alone), SAN_FILTER (one for both sanitizers).
# The backward side by side (issue 20): SKIP_BENCH=1 skips it with the forward ones, SKIP_FWD_BENCH=1 the forward
# ones alone, SKIP_BWD_BENCH=1 the backward alone; BWD_BENCH_VARIANTS, BWD_BENCH_SHAPES (default: the anchors
# and issue 21's head dims),
# BWD_BENCH_REPS (default 20; 10 at S=16384), BWD_BENCH_ROUNDS (default 1: the sides alternated that many
# times), BWD_BENCH_TIMEOUT (default 540 s a round).
set -uo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$SRC/out/gpu-check}
BUILD=${ATTNPROF_GPU_BUILD:-/tmp/attnprof-gpu-build}
JOBS=$(nproc)
QUICK=${1:-}
mkdir -p "$OUT"
declare -A status
summary() {
  echo
  echo "== gpu-check summary ($(date -u +%FT%TZ), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null))"
  for k in configure build hopper hopper_sass tests_logic tests_gpu tests_torch_cudnn ctest compare traces decode preflight memcheck racecheck throughput bench bench_dims bench_bwd timeline cpu_tests cpu_variant_tests cpu_bench; do printf '%-18s %s\n' "$k" "${status[$k]:-not run}"; done
}
trap summary EXIT

rm -rf "$BUILD"
# The H200 image lacks some Debian dev packages (oneDNN, GoogleTest, Google Benchmark): a .deps
# prefix copied from a Debian machine can travel with the tree.
PREFIX_ARGS=()
if [ -d "$SRC/.deps" ]; then
  PREFIX_ARGS+=(-DCMAKE_PREFIX_PATH="$SRC/.deps")
  # Inside the source tree, so no RUNPATH names it (install RUNPATHs keep outside directories only):
  # the linker and the loader find its libraries (oneDNN) here.
  export LD_LIBRARY_PATH="$SRC/.deps/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
if cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNPROF_CUDA=ON "${PREFIX_ARGS[@]}" >"$OUT/configure.log" 2>&1; then
  status[configure]=ok
else
  status[configure]="FAILED (configure.log)"; tail -20 "$OUT/configure.log"; exit 1
fi
ninja -C "$BUILD" -j"$JOBS" -k 0 >"$OUT/build.log" 2>&1
build_rc=$?
if [ $build_rc -eq 0 ]; then status[build]=ok; else status[build]="FAILED rc=$build_rc (build.log)"; tail -20 "$OUT/build.log"; fi
grep -E "spill|C75[01][0-9]" "$OUT/build.log" | grep -v " 0 bytes spill" | head -20 >"$OUT/ptxas_warnings.log" || true
/usr/local/cuda/bin/cuobjdump --dump-resource-usage "$BUILD/lib/libattnprof_cuda.so" 2>/dev/null | grep -A1 attention_forward >"$OUT/resource_usage.log" || true

run_gtest() {  # name binary [gtest args...]
  local name=$1 bin=$2; shift 2
  if timeout "${GTEST_TIMEOUT:-480}" "$BUILD/$bin" "$@" --gtest_output=xml:"$OUT/$name.xml" >"$OUT/$name.log" 2>&1; then
    status[$name]="ok ($(grep -c '^\[       OK \]' "$OUT/$name.log") passed, $(grep -c '^\[  SKIPPED \]' "$OUT/$name.log") skipped)"
  else
    status[$name]="FAILED ($name.log)"; grep -E "Failure|FAILED|error" "$OUT/$name.log" | head -20
  fi
}
# The Hopper building blocks first (issue 6): alone, so a hang or fault there is named.
if [ "${SKIP_TESTS:-0}" != 1 ]; then
run_gtest hopper tests/cuda/test_cuda_gpu --gtest_filter='Hopper*'
hgmma=$(/usr/local/cuda/bin/cuobjdump -sass "$BUILD/lib/libattnprof_cuda.so" 2>/dev/null | grep -cE '\bHGMMA\.')
utmaldg=$(/usr/local/cuda/bin/cuobjdump -sass "$BUILD/lib/libattnprof_cuda.so" 2>/dev/null | grep -cE '\bUTMALDG')
status[hopper_sass]="HGMMA instructions: $hgmma, UTMALDG instructions: $utmaldg"
run_gtest tests_logic tests/cuda/test_cuda_logic
# TESTS_WITH_SANITIZER=1: the GPU tests run beside the sanitizers instead (saves minutes of a lease).
[ "${TESTS_WITH_SANITIZER:-0}" = 1 ] || run_gtest tests_gpu tests/cuda/test_cuda_gpu ${TESTS_GPU_FILTER:+--gtest_filter=$TESTS_GPU_FILTER}
# The cuDNN tests again on PyTorch's libcudnn (bench/torch_cudnn.py), the one the side by side runs:
# the system's may be another version, with other engines (the SDPA_BWD operation needs 9.17).
if torch_cudnn=$(python3 "$SRC/bench/torch_cudnn.py"); then
  LD_LIBRARY_PATH="$torch_cudnn${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" run_gtest tests_torch_cudnn tests/cuda/test_cuda_gpu --gtest_filter='Cudnn*'
else
  status[tests_torch_cudnn]="not run (bench/torch_cudnn.py failed; its line above says why)"
fi
fi
if [ $build_rc -eq 0 ] && [ "${SKIP_CTEST:-0}" != 1 ]; then
  if ctest --test-dir "$BUILD" --output-on-failure -j4 >"$OUT/ctest.log" 2>&1; then status[ctest]="ok ($(grep -o '[0-9]* tests passed\|[0-9]*% tests passed.*' "$OUT/ctest.log" | tail -1))"; else status[ctest]="FAILED (ctest.log)"; fi
fi

# The CLI end to end on the GPU: every variant's glance row (work per forward, occupancy, the
# determinism check over 10 runs), its trace (plus traces/compare_<configuration>.json), and inspect reading each
# trace back.
inspect_traces() {
  local t
  for t in "$OUT"/traces/*.json.gz; do
    "$BUILD/attnprof" inspect "$t" --format json >"${t%.json.gz}.inspect.json" || return 1
  done
}
if [ $build_rc -eq 0 ] && [ "${SKIP_COMPARE:-0}" != 1 ]; then
  if "$BUILD/attnprof" compare --device cuda --out "$OUT/traces" 2>"$OUT/compare.err" | tee "$OUT/compare.txt" &&
     inspect_traces; then
    status[compare]="ok (compare.txt, traces/compare_*.json, traces/*.inspect.json)"
    if python3 "$SRC/scripts/check_gpu_traces.py" --attnprof "$BUILD/attnprof" --dir "$OUT/traces" 2>&1 | tee "$OUT/trace_checks.log"; then
      status[traces]="ok (trace_checks.log: inspect = run, flows, occupancy, annotations, structure)"
    else
      status[traces]="FAILED (trace_checks.log)"
    fi
  else
    status[compare]="FAILED (compare.err)"; tail -5 "$OUT/compare.err"
  fi
fi

# The decode path end to end (issue 21): compare at Llama's decode shape (one query row, 32 query
# heads on 8 kv heads, 32768 keys) must run flash's split-KV kernels and explain them
# (split_kv_decode; decode_bandwidth against the copy ceiling).
if [ $build_rc -eq 0 ] && [ "${SKIP_COMPARE:-0}" != 1 ]; then
  if "$BUILD/attnprof" compare --device cuda --batch 8 --heads 32 --kv-heads 8 --seq 1 --seq-k 32768 --head-dim 128 \
       --causal-align bottom-right --variants efficient,flash,cudnn --out "$OUT/decode" 2>"$OUT/decode_compare.err" |
       tee "$OUT/decode_compare.txt" && grep -q "split_kv_decode" "$OUT/decode_compare.txt"; then
    status[decode]="ok (decode_compare.txt: split_kv_decode)"
  else
    status[decode]="FAILED (decode_compare.txt, decode_compare.err)"; tail -5 "$OUT/decode_compare.err"
  fi
fi

# Memory preflight on the GPU (issue 8): a shape far beyond the card's memory must be refused with
# the estimate and the largest S that fits, exit 2, before anything is allocated.
"$BUILD/attnprof" run --device cuda --variant naive --batch 64 --heads 64 --seq 65536 --head-dim 64 \
    >"$OUT/preflight.out" 2>"$OUT/preflight.err"
preflight_rc=$?
if [ $preflight_rc -eq 2 ] && grep -q "largest --seq that fits" "$OUT/preflight.err"; then
  status[preflight]="ok (exit 2): $(head -1 "$OUT/preflight.err")"
else
  status[preflight]="FAILED rc=$preflight_rc: $(head -1 "$OUT/preflight.err")"
fi

SAN=/usr/local/cuda/bin/compute-sanitizer
FILTER='CudaPrimitives.*:CudaGemm.*:CudaFusedAttention.*:CudaFusedAttentionHeadDims.*:CudaDecodeAttention.*:CudnnSdpa.*:BottomRightGpu.*:Hopper*:FlashHopper.*:AttentionBackwardGpu.FlashMatchesFp64Gradients:AttentionBackwardGpu.KeysPast*:AttentionBackwardGpu.Strided*:AttentionBackwardGpu.EveryHeadDim*:AttentionBackwardGpu.FlashAttentionsGrid*-FlashHopper.HundredRunsAreBitwiseIdentical'
# racecheck: our kernels only (cuDNN's own wgmma kernels report hazards we cannot act on), and not
# flash's sm_90a backward: racecheck reports its mbarrier handoff of each stage's LSE and Δ as a
# race even when ordinary stores, released by the arrive, replace the bulk copy (bench/RESULTS.md);
# memcheck (FILTER) runs it through AttentionBackwardGpu's tests. The three mma.sync backward
# kernels run under racecheck through flash's deterministic mode (every kernel head dim and padding).
RACE_FILTER='CudaPrimitives.*:CudaGemm.*:CudaFusedAttention.*:CudaFusedAttentionHeadDims.*:CudaDecodeAttention.*:BottomRightGpu.ScaleMaskSoftmax*:BottomRightGpu.FusedKernels:Hopper*:FlashHopper.*:AttentionBackwardGpu.FlashDeterministic*-FlashHopper.HundredRunsAreBitwiseIdentical'
# memcheck and racecheck run side by side (each is CPU-bound in the tool; the GPU has room).
for tool in $([ "${SKIP_SANITIZER:-0}" = 1 ] || echo memcheck racecheck); do
  filter=$FILTER
  [ "$tool" = racecheck ] && filter=$RACE_FILTER
  [ -n "${SAN_FILTER:-}" ] && filter=$SAN_FILTER  # a narrower filter for both tools (a short lease)
  ( timeout "${SAN_TIMEOUT:-240}" "$SAN" --tool "$tool" --error-exitcode 9 --print-limit 20 env ATTNPROF_QUICK=1 \
      "$BUILD/tests/cuda/test_cuda_gpu" --gtest_filter="$filter" >"$OUT/$tool.log" 2>&1; echo $? >"$OUT/$tool.rc" ) &
done
if [ "${TESTS_WITH_SANITIZER:-0}" = 1 ] && [ "${SKIP_TESTS:-0}" != 1 ]; then
  ( timeout "${GTEST_TIMEOUT:-480}" "$BUILD/tests/cuda/test_cuda_gpu" --gtest_output=xml:"$OUT/tests_gpu.xml" \
      >"$OUT/tests_gpu.log" 2>&1; echo $? >"$OUT/tests_gpu.rc" ) &
fi
wait
if [ -f "$OUT/tests_gpu.rc" ]; then
  if [ "$(cat "$OUT/tests_gpu.rc")" = 0 ]; then
    status[tests_gpu]="ok ($(grep -c '^\[       OK \]' "$OUT/tests_gpu.log") passed, $(grep -c '^\[  SKIPPED \]' "$OUT/tests_gpu.log") skipped; beside the sanitizers)"
  else
    status[tests_gpu]="FAILED rc=$(cat "$OUT/tests_gpu.rc") (tests_gpu.log)"; grep -E "Failure|FAILED" "$OUT/tests_gpu.log" | head -20
  fi
fi
for tool in $([ "${SKIP_SANITIZER:-0}" = 1 ] || echo memcheck racecheck); do
  rc=$(cat "$OUT/$tool.rc")
  if [ "$rc" = 0 ]; then
    status[$tool]="ok: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.log" | tail -1), $(grep -c '^\[       OK' "$OUT/$tool.log") tests"
  else
    status[$tool]="FAILED rc=$rc ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.log" | tail -1))"
    grep -E "Invalid|Race|hazard|Failure" "$OUT/$tool.log" | head -10
  fi
done

# Which pipe bounds the softmax: results per SM clock of its instructions (under a second).
if [ $build_rc -eq 0 ]; then
  if timeout 60 "$BUILD/bench/instruction_throughput" >"$OUT/instruction_throughput.log" 2>&1; then
    status[throughput]="ok (instruction_throughput.log)"
  else
    status[throughput]="FAILED (instruction_throughput.log)"
  fi
  cat "$OUT/instruction_throughput.log"
fi

BENCH_ARGS=(--bench "$BUILD/bench/gpu_bench" --out "$OUT/side_by_side.json")
[ "$QUICK" = "--quick" ] && BENCH_ARGS+=(--shapes 8x16x1024x64 --reps 20)
[ -n "${BENCH_VARIANTS:-}" ] && BENCH_ARGS+=(--variants "$BENCH_VARIANTS")
[ -n "${BENCH_SHAPES:-}" ] && BENCH_ARGS+=(--shapes "$BENCH_SHAPES")
[ "${SKIP_SANITIZER:-0}" = 1 ] && status[memcheck]="skipped (SKIP_SANITIZER=1)" && status[racecheck]="skipped"
if [ "${SKIP_BENCH:-0}" = 1 ] || [ "${SKIP_FWD_BENCH:-0}" = 1 ]; then
  status[bench]="skipped (SKIP_BENCH=1 or SKIP_FWD_BENCH=1)"
elif PYTHONUNBUFFERED=1 timeout "${BENCH_TIMEOUT:-420}" python3 "$SRC/bench/pytorch_side_by_side.py" "${BENCH_ARGS[@]}" 2>&1 | tee "$OUT/side_by_side.log"; then
  status[bench]="ok (side_by_side.json)"
else
  status[bench]="FAILED (side_by_side.log)"
fi
# Issue 21's head dims (D 96 and 256 at 4x16x4096 and 1x16x16384, bf16 causal): our flash and cudnn
# against PyTorch's FlashAttention-2 and cuDNN backends in the same run; the table goes on
# side_by_side.log, the JSON into logs.tar.gz (the device returns at most 8 files).
if [ "${SKIP_BENCH:-0}" = 1 ] || [ "${SKIP_FWD_BENCH:-0}" = 1 ] || [ "$QUICK" = "--quick" ] || [ -n "${BENCH_SHAPES:-}" ]; then
  status[bench_dims]="skipped (SKIP_BENCH, SKIP_FWD_BENCH, --quick or BENCH_SHAPES)"
elif PYTHONUNBUFFERED=1 timeout "${BENCH_TIMEOUT:-420}" python3 "$SRC/bench/pytorch_side_by_side.py" --bench "$BUILD/bench/gpu_bench" \
    --shapes head-dims --variants flash,cudnn --out "$OUT/side_by_side_head_dims.json" 2>&1 | tee -a "$OUT/side_by_side.log"; then
  status[bench_dims]="ok (side_by_side.log; side_by_side_head_dims.json in logs.tar.gz)"
else
  status[bench_dims]="FAILED (side_by_side.log)"
fi
# Issue 20's backward against PyTorch's autograd in the same run (bf16 causal; backward = training step
# median - forward median on each side): flash, efficient and cudnn at the anchors, and naive, inplace,
# math and fused where they fit (a row that does not fit is one line saying so). The table goes to
# side_by_side_backward.txt, the rows to side_by_side_backward.json.
BWD_ARGS=(--bench "$BUILD/bench/gpu_bench" --pass backward --reps "${BWD_BENCH_REPS:-20}" --reps-large 10
          --out "$OUT/side_by_side_backward.json")
[ "$QUICK" = "--quick" ] && BWD_ARGS+=(--shapes 8x16x1024x64)
[ "$QUICK" != "--quick" ] && [ -z "${BWD_BENCH_SHAPES:-}" ] && BWD_ARGS+=(--shapes anchors,head-dims)
[ -n "${BWD_BENCH_VARIANTS:-}" ] && BWD_ARGS+=(--variants "$BWD_BENCH_VARIANTS")
[ -n "${BWD_BENCH_SHAPES:-}" ] && BWD_ARGS+=(--shapes "$BWD_BENCH_SHAPES")
[ -n "${BWD_BENCH_ROUNDS:-}" ] && BWD_ARGS+=(--rounds "$BWD_BENCH_ROUNDS")
if [ "${SKIP_BENCH:-0}" = 1 ] || [ "${SKIP_BWD_BENCH:-0}" = 1 ]; then
  status[bench_bwd]="skipped (SKIP_BENCH=1 or SKIP_BWD_BENCH=1)"
elif PYTHONUNBUFFERED=1 timeout "${BWD_BENCH_TIMEOUT:-$((540 * ${BWD_BENCH_ROUNDS:-1}))}" python3 "$SRC/bench/pytorch_side_by_side.py" "${BWD_ARGS[@]}" 2>&1 |
     tee "$OUT/side_by_side_backward.txt"; then
  status[bench_bwd]="ok (side_by_side_backward.txt, side_by_side_backward.json)"
else
  status[bench_bwd]="FAILED (side_by_side_backward.txt)"
fi
# TIMELINE=1: the sm90 tile-counter kernel's own timeline at the anchors (where each warpgroup's
# time goes).
TIMELINE_SHAPES=${TIMELINE_SHAPES:-8x16x1024x64,4x16x4096x64,4x16x4096x128,1x16x16384x128,16x32x512x128}
if [ "${TIMELINE:-0}" = 1 ] && [ $build_rc -eq 0 ]; then
  if timeout 180 "$BUILD/bench/flash_timeline" --shapes "$TIMELINE_SHAPES" >"$OUT/flash_timeline.log" 2>&1; then
    status[timeline]="ok (flash_timeline.log)"
  else
    status[timeline]="FAILED (flash_timeline.log)"; tail -5 "$OUT/flash_timeline.log"
  fi
fi
# Last, on an otherwise idle machine: our CPU flash beside PyTorch's CPU SDPA on this Xeon.
if [ "${CPU_BENCH:-0}" = 1 ]; then
  lscpu >"$OUT/lscpu.txt" 2>&1
  # The CPU kernels' and variants' tests on this Intel CPU (AMX paths run only where AMX exists).
  run_gtest cpu_tests tests/cpu/test_cpu
  run_gtest cpu_variant_tests tests/variants/test_variants
  echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2); ISA flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx512f|avx512_bf16|avx512_fp16|amx_bf16|amx_tile|amx_int8|avx512_vnni)$' | tr '\n' ' ')"
  if PYTHONUNBUFFERED=1 timeout "${CPU_BENCH_TIMEOUT:-240}" python3 "$SRC/bench/cpu_vs_pytorch.py" --attnprof "$BUILD/attnprof" \
       --json "$OUT/cpu_vs_pytorch.json" 2>&1 | tee "$OUT/cpu_vs_pytorch.log"; then
    status[cpu_bench]="ok (cpu_vs_pytorch.json)"
  else
    status[cpu_bench]="FAILED (cpu_vs_pytorch.log)"
  fi
fi
# Everything but the JSON, the logs read first and the summary goes into one archive (the device
# returns at most 8 files); built in /tmp so tar never reads its own output.
tar -czf /tmp/gpu-check-logs.tar.gz -C "$OUT" . 2>/dev/null
mv /tmp/gpu-check-logs.tar.gz "$OUT/logs.tar.gz"
# With CPU_BENCH=1 the backward's table stays in logs.tar.gz alone (its rows are in its JSON), so at most
# eight files come back.
KEEP_BWD_TABLE=(! -name side_by_side_backward.txt)
[ "${CPU_BENCH:-0}" = 1 ] && KEEP_BWD_TABLE=()
find "$OUT" -maxdepth 1 -type f ! -name logs.tar.gz ! -name side_by_side.json ! -name side_by_side.log \
  ! -name cpu_vs_pytorch.json ! -name cpu_vs_pytorch.log ! -name compare.txt ! -name tests_gpu.log \
  ! -name side_by_side_backward.json ${KEEP_BWD_TABLE[@]+"${KEEP_BWD_TABLE[@]}"} -delete
find "$OUT" -mindepth 1 -maxdepth 1 -type d -exec rm -rf {} + 2>/dev/null || true
