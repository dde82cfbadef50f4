#!/usr/bin/env bash
# fuzz/run.sh SECONDS [JOBS]: builds the trace reader's libFuzzer target with clang-14 and runs it
# for SECONDS (niced), seeded with PyTorch's anchor traces (decompressed and gzipped), ours and the
# hostile seeds of fuzz/seeds/ (limits, invalid UTF-8, control characters, bad durations), with the
# JSON and trace tokens of fuzz/trace.dict. A run over 1024 MB of resident memory is a failure.
# Crashes land in build/fuzz/crashes/; the exit status is non-zero when one was found.
set -euo pipefail
seconds=${1:?usage: fuzz/run.sh SECONDS [JOBS]}
jobs=${2:-1}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build/fuzz
CC=${CC:-clang-14} CXX=${CXX:-clang++-14} cmake -S "$root/fuzz" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
ninja -C "$build" trace_reader_fuzzer
corpus=$build/corpus
mkdir -p "$corpus" "$build/crashes"
for f in "$root"/tests/data/pytorch-traces/*.json.gz; do
  cp "$f" "$corpus/$(basename "$f")"
  gzip -dc "$f" > "$corpus/$(basename "$f" .gz)"
done
cp "$root"/fuzz/seeds/* "$corpus/" 2>/dev/null || true
parallel=()
if [ "$jobs" -gt 1 ]; then parallel=(-jobs="$jobs" -workers="$jobs"); fi  # logs then go to fuzz-N.log in $build
cd "$build"
exec nice -n 10 "$build/trace_reader_fuzzer" "$corpus" -max_total_time="$seconds" -max_len=65536 -timeout=10 \
  -rss_limit_mb=1024 -dict="$root/fuzz/trace.dict" "${parallel[@]}" -artifact_prefix="$build/crashes/" \
  -print_final_stats=1
