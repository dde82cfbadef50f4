#!/usr/bin/env bash
# A quick look on the H200 for kernel tuning (not the acceptance run: that is gpu-check.sh): build
# only the CLI and gpu_bench in a fresh directory, then
#   1. what PyTorch launches for its cuDNN backend (bench/pytorch_kernels.py),
#   2. the side-by-side benchmark for $PROBE_VARIANTS at $PROBE_SHAPES,
#   3. Nsight Compute sections for our flash kernel and cuDNN's at $NCU_SHAPES ($NCU=0 skips),
#   4. `attnprof run --variant cudnn` under our profiler (CPU time per forward, the API calls),
#   5. the sm90 tile-counter kernel's own timeline at $PROBE_SHAPES (bench/flash_timeline; its Chrome traces
#      in timeline_traces.tar.gz).
# Everything lands in $OUT/probe.log (+ ncu.txt, side_by_side.json, timeline_traces.tar.gz).
set -uo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$SRC/out/gpu-probe}
BUILD=${ATTNPROF_GPU_BUILD:-/tmp/attnprof-probe-build}
SHAPES=${PROBE_SHAPES:-8x16x1024x64,16x32x512x128,4x16x4096x128}
VARIANTS=${PROBE_VARIANTS:-flash,cudnn}
mkdir -p "$OUT"
exec > >(tee "$OUT/probe.log") 2>&1
rm -rf "$BUILD"
PREFIX_ARGS=()
if [ -d "$SRC/.deps" ]; then
  PREFIX_ARGS+=(-DCMAKE_PREFIX_PATH="$SRC/.deps")
  # Inside the source tree, so no RUNPATH names it (install RUNPATHs keep outside directories only):
  # the linker and the loader find its libraries (oneDNN) here.
  export LD_LIBRARY_PATH="$SRC/.deps/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNPROF_CUDA=ON "${PREFIX_ARGS[@]}" >"$OUT/configure.log" 2>&1 ||
  { tail -20 "$OUT/configure.log"; exit 1; }
ninja -C "$BUILD" -j"$(nproc)" attnprof_cli gpu_bench flash_timeline >"$OUT/build.log" 2>&1 || { grep -E "error" -A3 "$OUT/build.log" | head -40; exit 1; }
BIN=$(find "$BUILD" -maxdepth 1 -name attnprof -type f)
echo "== build ok ($(date -u +%T))"
grep -E "spill|C75[01][0-9]" "$OUT/build.log" | grep -v " 0 bytes spill" | head

echo "== 1. PyTorch's kernels"
timeout 120 python3 "$SRC/bench/pytorch_kernels.py" --backend cudnn --shapes "$SHAPES"

echo "== 2. side by side ($VARIANTS)"
PYTHONUNBUFFERED=1 timeout "${BENCH_TIMEOUT:-300}" python3 "$SRC/bench/pytorch_side_by_side.py" --bench "$BUILD/bench/gpu_bench" \
  --variants "$VARIANTS" --shapes "$SHAPES" --out "$OUT/side_by_side.json" 2>&1 | grep -v "^{"

if [ "${NCU:-1}" = 1 ]; then
  echo "== 3. Nsight Compute"
  for shape in ${NCU_SHAPES:-16x32x512x128 8x16x1024x64}; do
    for v in ${NCU_VARIANTS:-flash cudnn}; do
      echo "-- $v $shape"
      timeout 120 /usr/local/cuda/bin/ncu --kernel-name regex:'flash_forward_sm90|cudnn_generated' --launch-skip 8 --launch-count 1 \
        --section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy --section SchedulerStats \
        --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,smsp__cycles_active.avg.pct_of_peak_sustained_elapsed \
        "$BUILD/bench/gpu_bench" --variants "$v" --shapes "$shape" --reps 3 --warmup 2 2>&1 |
        grep -vE "^==PROF==|^\{" | grep -E "==ERROR==|==WARNING==|ERR_|^  [a-zA-Z]|---|Section|^    [A-Z]|sm__|smsp__|Duration|Registers|Shared|Grid|Block|Warp Cycles|Stall|Issue|Occupancy|Throughput" | head -60
    done
  done >"$OUT/ncu.txt" 2>&1
  echo "(ncu.txt)"
fi

echo "== 4. cudnn under our profiler (blog shape)"
rm -rf "$OUT/run_cudnn"
"$BIN" run --device cuda --variant cudnn --batch 8 --heads 16 --seq 1024 --head-dim 64 --active 10 --out "$OUT/run_cudnn" 2>&1 | tail -40
"$BIN" inspect "$OUT/run_cudnn"/*.json.gz 2>&1 | head -60
rm -rf "$OUT/run_cudnn"

echo "== 5. the sm90 tile-counter kernel's own timeline"
TRACES=$(mktemp -d)
timeout 120 "$BUILD/bench/flash_timeline" --shapes "$SHAPES" --runs 3 --trace "$TRACES"
tar -czf "$OUT/timeline_traces.tar.gz" -C "$TRACES" . && rm -rf "$TRACES"
echo "== done ($(date -u +%T))"
