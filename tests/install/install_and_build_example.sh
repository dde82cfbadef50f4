#!/usr/bin/env bash
# Installs attnprof from BUILD_DIR into a temporary prefix, builds examples/custom_variant
# against it with find_package, runs its program and the installed CLI with the plug-in, and
# checks the out-of-tree variant's row (error vs fp64, work per forward, trace).
set -euo pipefail
build_dir=$1
source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null

# A CUDA build installs its backend module beside libattnprof, and the installed CLI opens that
# copy (by its absolute path) when a command asks for the GPU.
if [ -n "$(find "$build_dir" -name libattnprof_cuda.so -not -path '*/CMakeFiles/*' -print -quit)" ]; then
  module=$(find "$work/prefix" -name libattnprof_cuda.so -print -quit)
  [ -n "$module" ] || { echo "FAIL: libattnprof_cuda.so is not installed"; exit 1; }
  [ "$(dirname "$module")" = "$(dirname "$(find "$work/prefix" -name libattnprof.so -print -quit)")" ] ||
    { echo "FAIL: $module is not beside libattnprof.so"; exit 1; }
  LD_DEBUG=files "$work/prefix/bin/attnprof" devices 2>"$work/devices.log" >/dev/null
  grep -q "file=$module " "$work/devices.log" || { echo "FAIL: installed attnprof devices did not open $module"; exit 1; }
  echo "installed CUDA module opened: $module"
fi
cmake -S "$source_dir/examples/custom_variant" -B "$work/example" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/example" >/dev/null

"$work/example/custom_compare" "$work/traces" | tee "$work/compare.txt"
grep -q '^two_pass ' "$work/compare.txt" || { echo "FAIL: no two_pass row"; exit 1; }
if grep -q 'refused' "$work/compare.txt"; then echo "FAIL: a variant refused the example's shape"; exit 1; fi
ls "$work"/traces/*two_pass_cpu.json.gz >/dev/null || { echo "FAIL: no two_pass trace"; exit 1; }

"$work/prefix/bin/attnprof" compare --device cpu --batch 1 --heads 2 --seq 128 --variants two_pass,flash \
  --plugin "$work/example/libtwo_pass_plugin.so" --out "$work/traces2" --format json >"$work/plugin.json"
python3 - "$work/plugin.json" <<'PY'
import json, sys
rows = {r["variant"]: r for r in json.load(open(sys.argv[1]))["rows"]}
row = rows["two_pass"]
assert row["rel_err"] <= 1e-2, row["rel_err"]
assert row["kernels_per_forward"] == 1, row["kernels_per_forward"]
print(f"plug-in row: two_pass rel_err {row['rel_err']:.2e}, {row['kernels_per_forward']} kernel/forward")
PY

# A variant that refuses the shape says why; when every variant asked for refuses, compare
# writes nothing and exits 2 with that reason on one line.
status=0
"$work/prefix/bin/attnprof" compare --device cpu --batch 1 --heads 2 --seq 64 --head-dim 1024 \
  --variants two_pass --plugin "$work/example/libtwo_pass_plugin.so" --out "$work/traces3" --format json \
  >"$work/refused.json" 2>"$work/refused.err" || status=$?
python3 - "$work/refused.json" "$work/refused.err" "$status" <<'PY'
import sys
out, err, status = open(sys.argv[1]).read(), open(sys.argv[2]).read(), int(sys.argv[3])
assert status == 2 and out == "" and err.count("\n") == 1 and "two_pass: --head-dim" in err, (status, out, err)
print("refusal:", err.strip())
PY
test ! -e "$work/traces3"

# A plug-in variant that defines only a forward has no backward: --pass backward refuses it in one
# line naming the pass, the variant, the device and what is allowed, exit 2, no files.
status=0
"$work/prefix/bin/attnprof" run --device cpu --batch 1 --heads 2 --seq 64 --variant two_pass --pass backward \
  --plugin "$work/example/libtwo_pass_plugin.so" --out "$work/traces4" >"$work/nobwd.out" 2>"$work/nobwd.err" || status=$?
python3 - "$work/nobwd.out" "$work/nobwd.err" "$status" <<'PY'
import sys
out, err, status = open(sys.argv[1]).read(), open(sys.argv[2]).read(), int(sys.argv[3])
assert status == 2 and out == "" and err.count("\n") == 1, (status, out, err)
for word in ("--pass backward", "two_pass", "device cpu", "--pass forward", "--variant naive|"):
    assert word in err, (word, err)
print("no backward:", err.strip())
PY
test ! -e "$work/traces4"
echo "install + out-of-tree example: OK"
