#!/usr/bin/env python3
"""attnprof inspect against python3's json.load on the same Kineto-style trace, in one run.

usage: trace_reader_vs_python.py ATTNPROF_BIN [SIZE_MB] [TRACE_PATH]
Generates the trace with trace_gen.py (once), then runs each reader as a child process and reports
its wall time and peak RSS (getrusage of the child). Targets: inspect at least 5x faster than
json.load and at most a quarter of its memory; a 1 GB trace read in under 30 s on the 2-core
development machine with a peak RSS under 1.5x the bytes of its decompressed traceEvents array.
"""
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def measure(argv):
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("%s failed: %s" % (argv[0], err))
    return wall, usage.ru_maxrss / 1024.0  # ru_maxrss is in KiB on Linux


def event_array_bytes(path):
    """Bytes from the '[' of "traceEvents" to its closing ']' (trace_gen.py's layout: the array is
    followed only by "traceName")."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(1 << 16)
        f.seek(max(0, size - (1 << 16)))
        tail = f.read()
    start = head.index(b'"traceEvents": [') + len(b'"traceEvents": ')
    end = size - len(tail) + tail.rindex(b"]") + 1
    return end - start


def main():
    binary = sys.argv[1]
    size_mb = float(sys.argv[2]) if len(sys.argv) > 2 else 500
    path = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else "/tmp/attnprof_trace_bench_%d.json" % size_mb
    if not os.path.exists(path) or abs(os.path.getsize(path) / 1e6 - size_mb) > 0.05 * size_mb:
        subprocess.run([sys.executable, os.path.join(HERE, "trace_gen.py"), path, str(size_mb)], check=True)
    size = os.path.getsize(path) / 1e6
    events_mib = event_array_bytes(path) / 2**20
    ours = measure([binary, "inspect", path, "--row-limit", "20"])
    theirs = measure([sys.executable, "-c", "import json, sys; json.load(open(sys.argv[1]))", path])
    print("trace: %s (%.1f MB)" % (path, size))
    print("%-40s %10s %12s %12s" % ("reader", "wall s", "MB/s", "peak RSS MiB"))
    print("%-40s %10.2f %12.0f %12.0f" % ("attnprof inspect (read + tables)", ours[0], size / ours[0], ours[1]))
    print("%-40s %10.2f %12.0f %12.0f" % ("python3 json.load (parse only)", theirs[0], size / theirs[0], theirs[1]))
    print("speed-up %.1fx (target >= 5x), memory %.3f of python's (target <= 0.25)"
          % (theirs[0] / ours[0], ours[1] / theirs[1]))
    print("inspect: %.2f s (target < 30 s at 1 GB), peak RSS %.0f MiB = %.2fx the %.0f MiB traceEvents array "
          "(target <= 1.5x)" % (ours[0], ours[1], ours[1] / events_mib, events_mib))
    print("json: " + json.dumps({"trace_mb": round(size, 1), "inspect_s": round(ours[0], 3),
                                 "inspect_rss_mib": round(ours[1], 1), "python_s": round(theirs[0], 3),
                                 "python_rss_mib": round(theirs[1], 1),
                                 "event_array_mib": round(events_mib, 1)}))


if __name__ == "__main__":
    main()
