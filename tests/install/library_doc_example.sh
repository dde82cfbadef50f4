#!/usr/bin/env bash
# docs/library.md's example compiles as written: extract the first ```cpp block, build it against
# the build tree's library and headers, run it, and check its row.
set -euo pipefail
build_dir=$1
source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
awk '/^```cpp$/{grab=1; next} /^```$/{if (grab) exit} grab' "$source_dir/docs/library.md" >"$work/example.cpp"
test -s "$work/example.cpp" || { echo "FAIL: no cpp block in docs/library.md"; exit 1; }
lib=$(find "$build_dir/lib" -maxdepth 1 -name 'libattnprof.so' -o -maxdepth 1 -name 'libattnprof.a' | head -n1)
c++ -std=c++20 -O2 -I"$source_dir/include" "$work/example.cpp" "$lib" -Wl,-rpath,"$(dirname "$lib")" -pthread \
  -o "$work/example"
(cd "$work" && ./example) | tee "$work/out.txt"
grep -q '^online ' "$work/out.txt" || { echo "FAIL: no row for the doc's variant"; exit 1; }
echo "docs/library.md example: OK"
