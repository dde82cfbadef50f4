#!/usr/bin/env bash
# The main job: install dependencies, build Release, run `attnprof compare` (extra arguments are
# passed to compare, e.g. scripts/run.sh --device cpu --batch 1).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release
cmake --build --preset release --target attnprof_cli
./build/release/attnprof compare "$@"
