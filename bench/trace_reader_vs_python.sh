#!/usr/bin/env bash
# bench/trace_reader_vs_python.sh [SIZE_MB] : builds attnprof, generates a ~SIZE_MB (default 500)
# Kineto-style trace and prints inspect's wall time and peak RSS beside python3's json.load.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${ATTNPROF_BUILD:-$root/build/dev}
ninja -C "$build" attnprof_cli >/dev/null
exec python3 "$root/bench/trace_reader_vs_python.py" "$build/attnprof" "${1:-500}" "${2:-}"
