#!/usr/bin/env bash
# bench/trace_reader_vs_python.sh [SIZE_MB] [TRACE_PATH]: builds attnprof (ATTNPROF_BUILD, default
# build/release), generates a ~SIZE_MB (default 1000) Kineto-style trace and prints inspect's wall
# time and peak RSS beside python3's json.load.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${ATTNPROF_BUILD:-$root/build/release}
ninja -C "$build" attnprof_cli >/dev/null
exec python3 "$root/bench/trace_reader_vs_python.py" "$build/attnprof" "${1:-1000}" "${2:-}"
