#!/usr/bin/env bash
# The whole test suite: install dependencies, build (CUDA sources too when a toolkit is found),
# run ctest; then the trace-reader fuzzer for a bounded time, and the CPU suite again under
# AddressSanitizer + UBSan. GPU tests skip with a reason when no GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)

echo "== build (release preset: CUDA when a toolkit is found)"
cmake --preset release
cmake --build --preset release -j "$jobs"
echo "== tests"
ctest --preset release -j "$jobs"

echo "== trace-reader fuzzer (libFuzzer + ASan, 60 s, seeded with PyTorch's traces and ours)"
if ! fuzz/run.sh 60 >build/fuzz.log 2>&1; then
  tail -n 60 build/fuzz.log
  echo "fuzzer: failed: its build, or a crash (inputs in build/fuzz/crashes/); build/fuzz.log above" >&2
  exit 1
fi
tail -n 12 build/fuzz.log

echo "== tests under AddressSanitizer + UBSan (CPU build)"
cmake --preset asan
cmake --build --preset asan -j "$jobs"
# Left out under ASan: the tests that run the binary under an address-space limit (RLIMIT_AS, as
# `ulimit -v`): ASan reserves terabytes of shadow memory at start, so no such limit can hold. They
# run in the release suite above.
ctest --preset asan -j "$jobs" -LE "gpu|install" -E "^(HostileTraceCli|InspectOnePass|MemoryLimit)\."
