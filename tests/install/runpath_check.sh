#!/usr/bin/env bash
# No binary or library of the build has an empty or relative RUNPATH/RPATH entry: the loader
# reads an empty entry (a trailing ':') as the current directory, so a library planted in the
# folder a user stands in would be loaded. Two checks:
#   1. `readelf -d` on every ELF file the build made: each entry is absolute or starts with $ORIGIN;
#   2. the attack itself: a libz.so.1 whose constructor announces itself, placed in the current
#      directory, must not be loaded by `attnprof --help`.
set -euo pipefail
build_dir=$1
bin=${ATTNPROF_BIN:-$build_dir/attnprof}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

checked=0
bad=0
while IFS= read -r -d '' f; do
  head -c 4 "$f" | grep -q $'^\x7fELF' || continue
  checked=$((checked + 1))
  paths=$(readelf -d "$f" 2>/dev/null | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]$/\2/p')
  [ -n "$paths" ] || continue
  # split on ':' keeping empty fields (a leading, doubled or trailing ':' is an empty entry)
  IFS=':' read -r -a entries <<<"$paths:sentinel"
  unset 'entries[${#entries[@]}-1]'
  for e in "${entries[@]}"; do
    case "$e" in
      /*|'$ORIGIN'|'$ORIGIN/'*) ;;
      *) echo "FAIL: $f has RUNPATH [$paths]: entry '${e}' is empty or relative"; bad=$((bad + 1)) ;;
    esac
  done
done < <(find "$build_dir" -type f \( -perm -u+x -o -name '*.so' -o -name '*.so.*' \) -not -path '*/CMakeFiles/*' -print0)
[ "$checked" -gt 0 ] || { echo "FAIL: no ELF file found under $build_dir"; exit 1; }
echo "runpath: $checked ELF files read, $bad bad entries"
[ "$bad" -eq 0 ] || exit 1

# The attack: a planted libz.so.1 in the current directory.
cat >"$work/evil.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
__attribute__((constructor)) static void planted(void) { puts("PLANTED-LIBZ-LOADED"); exit(97); }
EOF
cc -shared -fPIC -o "$work/libz.so.1" "$work/evil.c"
set +e
out=$(cd "$work" && "$bin" --help 2>&1)
rc=$?
set -e
if [ $rc -ne 0 ] || grep -q PLANTED-LIBZ-LOADED <<<"$out"; then
  echo "FAIL: attnprof --help run beside a planted libz.so.1 exited $rc:"
  printf '%s\n' "$out" | head -n 20
  exit 1
fi
echo "runpath: attnprof --help ignores a libz.so.1 in the current directory"
