#!/usr/bin/env python3
"""Checks the traces `attnprof compare --device cuda --out DIR` wrote (issue 4, acceptance 1 and 4).

For every variant's trace in DIR's newest compare_<configuration>.json:
  - `attnprof inspect --format json` of the trace reproduces the run's kernels, memcpys and memsets
    per forward;
  - every GPU kernel has an ac2g flow from its launch (a flow start and end with its correlation id)
    and a non-zero occupancy estimate ("est. achieved occupancy %"), whatever API launched it;
  - the GPU lane holds a gpu_user_annotation attn_fwd per profiled forward;
  - structure as PyTorch's: naive 1 Memcpy DtoD per forward, inplace none, fused 3 kernels, math no
    tensor-core GEMM kernel.
Prints one line per variant and exits 1 on the first variant that fails any check.

    python3 scripts/check_gpu_traces.py --attnprof build/gpu/attnprof --dir $OUT/traces
"""
import argparse
import glob
import gzip
import json
import os
import subprocess
import sys

TENSOR_CORE_MARKS = ("wgmma", "hmma", "_h_", "bf16", "f16", "tf32", "nvjet", "s16816", "1688", "16816")


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def check_variant(attnprof, row):
    problems = []
    name = row["variant"]
    trace_path = row["trace_path"]
    inspected = json.loads(subprocess.run([attnprof, "inspect", trace_path, "--format", "json"], check=True,
                                          capture_output=True, text=True).stdout)
    fw = inspected.get("forwards")  # absent when the trace has no attn_fwd range
    if fw is None:
        problems.append("inspect found no attn_fwd range")
    else:
        for key in ("kernels_per_forward", "memcpy_per_forward", "memset_per_forward"):
            if abs(fw[key] - row[key]) > 1e-9:
                problems.append(f"inspect {key} {fw[key]} != run's {row[key]}")

    events = load(trace_path)["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel" and e.get("ph") == "X"]
    starts = {e["id"] for e in events if e.get("cat") == "ac2g" and e.get("ph") == "s"}
    ends = {e["id"] for e in events if e.get("cat") == "ac2g" and e.get("ph") == "f"}
    launches = {e["args"].get("correlation"): e["name"] for e in events
                if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    if not kernels:
        problems.append("no kernel events")
    for k in kernels:
        corr = k["args"].get("correlation")
        if corr not in starts or corr not in ends:
            problems.append(f"kernel {k['name'][:60]} (correlation {corr}) has no ac2g flow")
        if not k["args"].get("est. achieved occupancy %", 0) > 0:
            problems.append(f"kernel {k['name'][:60]} launched by {launches.get(corr, '?')} has no occupancy estimate")
    annotations = [e for e in events if e.get("cat") == "gpu_user_annotation" and e.get("name") == "attn_fwd"]
    if not annotations:
        problems.append("no gpu_user_annotation attn_fwd on the GPU lane")
    launch_apis = sorted({launches[k["args"].get("correlation")] for k in kernels if k["args"].get("correlation") in launches})

    kpf, cpf = row["kernels_per_forward"], row["memcpy_per_forward"]
    if name == "naive" and cpf != 1:
        problems.append(f"naive has {cpf} memcpys per forward, PyTorch's has 1 (masked_fill's clone)")
    if name == "inplace" and cpf != 0:
        problems.append(f"inplace has {cpf} memcpys per forward, expected 0")
    if name == "fused" and kpf != 3:
        problems.append(f"fused has {kpf} kernels per forward, expected 3")
    if name == "math":
        gemms = {k["name"] for k in kernels if "gemm" in k["name"].lower()}
        tc = [g for g in gemms if any(m in g.lower() for m in TENSOR_CORE_MARKS)]
        if not gemms or tc:
            problems.append(f"math GEMM kernels {sorted(gemms)}: tensor-core ones {tc}")
    status = "ok" if not problems else "FAILED"
    print(f"{name:10s} {status}: {kpf:g} kernels, {cpf:g} memcpy, {row['memset_per_forward']:g} memset per forward; "
          f"{len(kernels)} kernel events, all with flows and occupancy; {len(annotations)} attn_fwd GPU annotations; "
          f"launched via {', '.join(launch_apis)}" if not problems else f"{name:10s} FAILED: " + "; ".join(problems[:5]))
    return not problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--attnprof", required=True)
    ap.add_argument("--dir", required=True)
    args = ap.parse_args()
    # compare names its results by configuration (compare_<...>.json): the newest one
    results = sorted(glob.glob(f"{args.dir}/compare_*.json"), key=os.path.getmtime)
    if not results:
        sys.exit(f"no compare_*.json in {args.dir}")
    rows = [r for r in load(results[-1])["rows"] if "refused" not in r]
    ok = all([check_variant(args.attnprof, r) for r in rows])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
