#!/usr/bin/env bash
# Nsight Compute on one forward of each given variant at one shape (H200 device calls): the issue
# slots, the pipes (tensor, FMA, ALU, XU = MUFU), the warp stall reasons and the per-SASS-line
# counters, for our flash kernels beside cuDNN's. Needs a built tree (scripts/gpu-check.sh's).
#   OUT=/tmp/out BUILD=/tmp/gpubuild bash scripts/ncu-flash.sh
# Environment: NCU_SHAPE (default 8x16x1024x64), NCU_VARIANTS (default "flash@sm90-tile-counter cudnn"),
# NCU_SKIP (matching launches skipped, default 150), NCU_TIMEOUT per variant (default 90 s). Writes $OUT/ncu.tar.gz (details pages, SASS CSVs, logs).
set -uo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$SRC/out/ncu}
BUILD=${BUILD:-${ATTNPROF_GPU_BUILD:-/tmp/attnprof-gpu-build}}
NCU=${NCU:-/usr/local/cuda/bin/ncu}
SHAPE=${NCU_SHAPE:-8x16x1024x64}
WORK=/tmp/attnprof-ncu
rm -rf "$WORK" && mkdir -p "$WORK" "$OUT"
[ -x "$NCU" ] || NCU=$(command -v ncu) || { echo "ncu-flash: no ncu found" >&2; exit 2; }
[ -x "$BUILD/bench/gpu_bench" ] || { echo "ncu-flash: $BUILD/bench/gpu_bench missing (build first)" >&2; exit 2; }
METRICS=smsp__inst_executed.sum,smsp__inst_executed_pipe_xu.sum,smsp__inst_executed_pipe_fma.sum,smsp__inst_executed_pipe_alu.sum,smsp__inst_executed_pipe_fmaheavy.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg
for variant in ${NCU_VARIANTS:-flash@sm90-tile-counter cudnn}; do
  name=${variant//@/_}
  # Launch NCU_SKIP + 1 of the matching kernels: past cuDNN's plan timing (it times up to 3 engine
  # configs, each with its own kernel: session 5's call 2 profiled config 6 at skip 40) and the
  # warm-up, inside the timed repetitions.
  timeout "${NCU_TIMEOUT:-90}" "$NCU" --kernel-name regex:'flash_forward_sm90|sdpa' --launch-skip "${NCU_SKIP:-150}" --launch-count 1 \
      --section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats --section SchedulerStats \
      --section WarpStateStats --section Occupancy --section SourceCounters --metrics "$METRICS" \
      --import-source no -f -o "$WORK/$name" \
      "$BUILD/bench/gpu_bench" --variants "$variant" --shapes "$SHAPE" --warmup 5 --reps 200 >"$WORK/$name.run.log" 2>&1
  echo "$variant: ncu rc=$?"
  if [ -f "$WORK/$name.ncu-rep" ]; then
    "$NCU" -i "$WORK/$name.ncu-rep" --page details --print-details all >"$WORK/$name.details.txt" 2>&1
    "$NCU" -i "$WORK/$name.ncu-rep" --page source --csv --print-source sass >"$WORK/$name.sass.csv" 2>&1
    grep -E "Issue Slots Busy|Executed Ipc Active|Warp Cycles Per Issued|No Eligible|smsp__inst_executed|pipe_|hmma|Duration|Elapsed Cycles|Registers Per|Shared Memory Config" \
      "$WORK/$name.details.txt" | head -40
  fi
done
tar -czf "$OUT/ncu.tar.gz" -C "$WORK" . 2>/dev/null
