#!/bin/sh
# check_layers.py must fail on a tree with climbing includes, naming each: a copy of src/ and
# include/ with one private and one public header included from below their layer.
set -eu
source_dir=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
cp -R "$source_dir/src" "$source_dir/include" "$work/"
printf '#include "run/run_json.h"\n' >> "$work/src/core/dtype.cpp"
printf '#include <attnprof/variant.h>\n' >> "$work/src/trace/reader.cpp"
status=0
out=$(python3 "$source_dir/scripts/check_layers.py" "$work") || status=$?
echo "$out"
fail() { echo "FAIL: $1"; exit 1; }
[ "$status" -eq 1 ] || fail "exit status $status, expected 1"
echo "$out" | grep -q '^src/core/dtype.cpp:[0-9]*: core includes run/run_json.h (run is above core)$' \
  || fail "the core -> run include is not reported"
echo "$out" | grep -q '^src/trace/reader.cpp:[0-9]*: trace includes attnprof/variant.h (variants is above trace)$' \
  || fail "the trace -> variants include is not reported"
echo "$out" | grep -q ', 2 climbing$' || fail "expected exactly 2 climbing includes"
rm -rf "$work"
