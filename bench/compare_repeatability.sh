#!/usr/bin/env bash
# Do repeated `attnprof compare` runs agree within the spread they print?
# Runs `compare --device cpu --format json` RUNS times (default 10) at a small shape and checks,
# for every variant, that each run's median lies inside every other run's printed min–max
# spread. Prints per variant every run's median and spread; then the range of the runs'
# medians, the range inside every spread, how many (run, other run) pairs hold the median
# inside the spread, and how many pairs of runs
# have spreads that meet (so attnprof would not rank one run above the other), PASS or FAIL,
# and the count of each. Exits 1 when any median falls outside another run's spread.
#   bench/compare_repeatability.sh [ATTNPROF_BINARY] [RUNS]
# THREADS=N passes --threads N (default: every core); ROUNDS=N passes --rounds N (default:
# compare's own, 15 on the CPU).
set -euo pipefail
bin=${1:-build/cpu/bin/attnprof}
runs=${2:-10}
shape=(--device cpu --batch 1 --heads 4 --seq 256 --head-dim 64 --dtype fp32)
if [[ -n ${THREADS:-} ]]; then shape+=(--threads "$THREADS"); fi
if [[ -n ${ROUNDS:-} ]]; then shape+=(--rounds "$ROUNDS"); fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "attnprof compare ${shape[*]}, $runs runs on $(nproc) cores (load average $(cut -d' ' -f1-3 /proc/loadavg))"
for i in $(seq 1 "$runs"); do
  "$bin" compare "${shape[@]}" --format json --out "$work/traces" >"$work/run$i.json" 2>"$work/run$i.err" ||
    { cat "$work/run$i.err" >&2; exit 1; }
done
python3 - "$work" "$runs" <<'PY'
import json, sys
work, runs = sys.argv[1], int(sys.argv[2])
by_variant = {}
for i in range(1, runs + 1):
    with open(f"{work}/run{i}.json") as f:
        for row in json.load(f)["rows"]:
            stats = row.get("time_stats")
            if isinstance(stats, dict):
                by_variant.setdefault(row["variant"], []).append(stats)
failed = False
print("per run: median [min\u2013max] in ms, in run order")
for name, stats in by_variant.items():
    print(f"{name:<10} " + "  ".join(f"{s['median_ms']:.4f} [{s['min_ms']:.4f}\u2013{s['max_ms']:.4f}]" for s in stats))
print()
print(f"{'variant':<10} {'fwds':>4} {'medians of the runs (ms)':>25} {'in every spread (ms)':>22} "
      f"{'median in spread':>16} {'spreads meet':>12}  result")
passed = 0
for name, stats in by_variant.items():
    medians = [s["median_ms"] for s in stats]
    low, high = max(s["min_ms"] for s in stats), min(s["max_ms"] for s in stats)
    n = len(stats)
    # run i's median inside run j's printed min-max spread, over the ordered pairs i != j
    inside = sum(stats[j]["min_ms"] <= stats[i]["median_ms"] <= stats[j]["max_ms"]
                 for i in range(n) for j in range(n) if i != j)
    # the spreads of runs i and j overlap: attnprof would call them within noise of each other
    meet = sum(stats[i]["min_ms"] <= stats[j]["max_ms"] and stats[j]["min_ms"] <= stats[i]["max_ms"]
               for i in range(n) for j in range(i + 1, n))
    agree = n == runs and inside == n * (n - 1)
    failed |= not agree
    passed += agree
    span = f"{low:.4f}\u2013{high:.4f}" if low <= high else "none"
    print(f"{name:<10} {stats[0]['count']:>4} {min(medians):>12.4f}\u2013{max(medians):<12.4f} {span:>22} "
          f"{inside:>9}/{n * (n - 1):<6} {meet:>7}/{n * (n - 1) // 2:<4}  {'PASS' if agree else 'FAIL'}")
print(f"{passed} PASS, {len(by_variant) - passed} FAIL of {len(by_variant)} variants "
      f"(PASS: every run's median inside every other run's printed spread)")
sys.exit(1 if failed else 0)
PY
