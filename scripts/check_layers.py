#!/usr/bin/env python3
"""Lists every #include of a project header in src/ and checks that it points down or sideways
in the layer order of docs/architecture.md. The rule table below is written out by hand, apart
from the CMake targets that enforce the same order (cmake/Layers.cmake), so each checks the other.

usage: check_layers.py [SOURCE_DIR]   (default: the checkout holding this script)
Prints one line per climbing include ("src/core/x.cpp:3: core includes run/run.h (run is above
core)") and exits 1 when there is any, 0 otherwise; --list prints every include with its verdict.
"""
import pathlib
import posixpath
import re
import sys

# Each layer and every layer it may include (the closure, spelled out): down or its own.
MAY_INCLUDE = {
    "core": {"core"},
    "trace": {"trace", "core"},
    "profiler": {"profiler", "trace", "core"},
    "ops": {"ops", "profiler", "trace", "core"},
    "cpu": {"cpu", "ops", "profiler", "trace", "core"},
    "variants": {"variants", "ops", "profiler", "trace", "core"},
    "cuda": {"cuda", "ops", "profiler", "trace", "core"},
    "report": {"report", "trace", "core"},
    "run": {"run", "report", "cpu", "variants", "ops", "profiler", "trace", "core"},
    "cli": {"cli", "run", "report", "cpu", "variants", "ops", "profiler", "trace", "core"},
}

# The layer that owns each public header (include/attnprof/).
PUBLIC_OWNER = {
    "dtype.h": "core", "tensor.h": "core", "error.h": "core", "memory.h": "core",
    "attention.h": "core", "time_stats.h": "core", "kernel_overrides.h": "core",
    "trace.h": "trace",
    "profiler.h": "profiler",
    "variant.h": "variants",
    "report.h": "report", "result.h": "report",
    "run.h": "run", "compare.h": "run",
}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def includes(path):
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = INCLUDE.match(line)
        if m:
            yield number, m.group(1), m.group(2)


def target_layer(kind, name, own_folder):
    """The layer an include names, or None for a system or third-party header."""
    if name.startswith("attnprof/"):
        header = name[len("attnprof/"):]
        if header not in PUBLIC_OWNER:
            raise SystemExit(f"include/attnprof/{header}: no layer owns it (add it to PUBLIC_OWNER)")
        return PUBLIC_OWNER[header]
    if kind == '"':
        if name.startswith("../") or "/../" in name:
            # The compiler reads "../x/y.h" from the including file's own folder, past every
            # include root: its layer is the folder it lands in.
            landed = posixpath.normpath(posixpath.join(own_folder, name))
            return landed.split("/")[0]
        first = name.split("/")[0]
        if first in MAY_INCLUDE:
            return first
        return own_folder  # a header beside the file ("check.h")
    return None


def check(root, listing):
    problems = []
    count = 0
    src = root / "src"
    for path in sorted(src.rglob("*")):
        if path.suffix not in {".h", ".cpp", ".cu", ".cuh"} or not path.is_file():
            continue
        layer = path.relative_to(src).parts[0]
        if layer not in MAY_INCLUDE:
            problems.append(f"{path.relative_to(root)}: folder src/{layer} is in no layer (add it to MAY_INCLUDE)")
            continue
        for number, kind, name in includes(path):
            to = target_layer(kind, name, layer)
            if to is None:
                continue
            count += 1
            ok = to in MAY_INCLUDE[layer]
            where = f"{path.relative_to(root)}:{number}"
            if listing:
                print(f"{where}: {layer} -> {to} ({name}) {'ok' if ok else 'CLIMBS'}")
            if not ok:
                problems.append(f"{where}: {layer} includes {name} ({to} is above {layer})")
    for header in sorted(p.name for p in (root / "include" / "attnprof").glob("*.h")):
        if header not in PUBLIC_OWNER:
            problems.append(f"include/attnprof/{header}: no layer owns it (add it to PUBLIC_OWNER)")
    return count, problems


def main(argv):
    listing = "--list" in argv
    args = [a for a in argv if a != "--list"]
    root = pathlib.Path(args[0]) if args else pathlib.Path(__file__).resolve().parent.parent
    count, problems = check(root, listing)
    for p in problems:
        print(p)
    if count == 0:
        print(f"{root}/src: no project include found")
        return 1
    print(f"{count} includes of project headers checked, {len(problems)} climbing")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
