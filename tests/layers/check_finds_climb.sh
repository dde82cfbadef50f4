#!/bin/sh
# check_layers.py must fail on a tree with climbing includes, naming each: a copy of src/ and
# include/ with one private and one public header included from below their layer, and one private
# header reached by a relative path ("../cpu/..."), which no include root can stop.
set -eu
source_dir=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
cp -R "$source_dir/src" "$source_dir/include" "$work/"
printf '#include "run/run_json.h"\n' >> "$work/src/core/dtype.cpp"
printf '#include <attnprof/variant.h>\n' >> "$work/src/trace/reader.cpp"
printf '#include "../cpu/openblas.h"\n' >> "$work/src/variants/naive.cpp"
status=0
out=$(python3 "$source_dir/scripts/check_layers.py" "$work") || status=$?
echo "$out"
fail() { echo "FAIL: $1"; exit 1; }
[ "$status" -eq 1 ] || fail "exit status $status, expected 1"
echo "$out" | grep -q '^src/core/dtype.cpp:[0-9]*: core includes run/run_json.h (run is above core)$' \
  || fail "the core -> run include is not reported"
echo "$out" | grep -q '^src/trace/reader.cpp:[0-9]*: trace includes attnprof/variant.h (variants is above trace)$' \
  || fail "the trace -> variants include is not reported"
echo "$out" | grep -q '^src/variants/naive.cpp:[0-9]*: variants includes ../cpu/openblas.h (cpu is above variants)$' \
  || fail "the variants -> cpu include by a relative path is not reported"
echo "$out" | grep -q ', 3 climbing$' || fail "expected exactly 3 climbing includes"
rm -rf "$work"
