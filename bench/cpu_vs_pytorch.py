#!/usr/bin/env python3
"""attnprof's CPU flash kernel beside PyTorch's CPU scaled_dot_product_attention, same machine, same run.

Runs the shapes of shared/anchors/README.md's CPU table (causal, fp32 and bf16) with 2 and with 16
threads (or --threads), timing PyTorch's SDPA pinned to its flash backend (wall clock, median of
--reps after --warmup) and `attnprof run --variant flash --device cpu --format json` with the same
thread count, and prints one Markdown row per (threads, shape, dtype) with the speed ratio.

    python3 bench/cpu_vs_pytorch.py --attnprof build/rel/attnprof [--threads 2,16] [--json out.json]
    python3 bench/cpu_vs_pytorch.py --driver build/rel/bench/bench_cpu_attention_json   # no CLI needed
    python3 bench/cpu_vs_pytorch.py --attnprof build/rel/attnprof --isa avx512_amx,avx512_bf16

--isa runs our side once per --cpu-isa cap (bf16 rows; fp32 takes the first), so the AMX
path and the vdpbf16ps path print beside the same PyTorch number. Without it our side runs the best
path the CPU offers.

Needs PyTorch >= 2.3 (torch.nn.attention.sdpa_kernel). Ratio = PyTorch ms / attnprof ms, so
> 1.0 means attnprof is faster.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

# (threads filter, B, H, S, D): the anchors' CPU table.
SHAPES = [
    (None, 1, 16, 1024, 64),
    (None, 1, 16, 4096, 64),
    (None, 1, 16, 2048, 128),
    (16, 8, 16, 1024, 64),  # the blog's shape, measured with 16 threads only in the anchors
]
DTYPES = ["float32", "bfloat16"]
OUR_DTYPE = {"float32": "fp32", "bfloat16": "bf16"}


def flops(b, h, s, d):
    return 4.0 * b * h * s * s * d / 2.0  # causal halves the work


def time_pytorch(torch, b, h, s, d, dtype, threads, warmup, reps):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    dt = getattr(torch, dtype)
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(b, h, s, d, generator=gen).to(dt) for _ in range(3))
    times = []
    with torch.no_grad(), sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        for i in range(warmup + reps):
            t0 = time.perf_counter_ns()
            F.scaled_dot_product_attention(q, k, v, is_causal=True)
            t1 = time.perf_counter_ns()
            if i >= warmup:
                times.append((t1 - t0) / 1e6)
    return statistics.median(times)


def our_env(threads):
    return dict(os.environ, OMP_NUM_THREADS=str(threads))


def isa_flag(isa):
    return ["--cpu-isa", isa] if isa else []


def time_attnprof(binary, b, h, s, d, dtype, threads, extra, isa):
    cmd = [binary, "run", "--variant", "flash", "--device", "cpu", "--batch", str(b), "--heads", str(h),
           "--kv-heads", str(h), "--seq", str(s), "--head-dim", str(d), "--dtype", OUR_DTYPE[dtype], "--causal",
           "--threads", str(threads), "--format", "json"] + isa_flag(isa) + extra
    env = our_env(threads)
    with tempfile.TemporaryDirectory() as scratch:
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=scratch)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr.strip()}")
    row = json.loads(done.stdout)
    return float(row["median_ms"]), float(row.get("rel_err", float("nan")))


def time_driver(binary, b, h, s, d, dtype, threads, reps, isa):
    cmd = [binary, "--variant", "flash", "--batch", str(b), "--heads", str(h), "--seq", str(s), "--head-dim", str(d),
           "--dtype", OUR_DTYPE[dtype], "--causal", "1", "--threads", str(threads), "--reps", str(reps)] + isa_flag(isa)
    env = our_env(threads)
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr.strip()}")
    row = json.loads(done.stdout)
    return float(row["median_ms"]), float(row["rel_err"])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--attnprof", help="path to the attnprof binary (times `attnprof run`)")
    which.add_argument("--driver", help="path to bench_cpu_attention_json (times the kernel alone)")
    parser.add_argument("--threads", default="2,16", help="comma-separated thread counts (default 2,16)")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--extra", default="", help="extra flags for `attnprof run`, e.g. '--no-profile'")
    parser.add_argument("--isa", default="",
                        help="comma-separated --cpu-isa caps for our side, e.g. avx512_amx,avx512_bf16 "
                             "(default: no cap, the best path)")
    args = parser.parse_args()

    import torch

    print(f"torch {torch.__version__}, {torch.backends.cpu.get_cpu_capability()}, "
          f"attnprof {os.path.abspath(args.attnprof or args.driver)}")
    isas = [i for i in args.isa.split(",") if i] or [""]
    print("| threads | B | H | S | D | dtype | our ISA cap | PyTorch SDPA flash ms (GFLOP/s) "
          "| attnprof flash ms (GFLOP/s) | ratio | attnprof rel err |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for threads in (int(t) for t in args.threads.split(",")):
        for only, b, h, s, d in SHAPES:
            if only is not None and only != threads:
                continue
            for dtype in DTYPES:
                theirs = time_pytorch(torch, b, h, s, d, dtype, threads, args.warmup, args.reps)
                for isa in isas if dtype == "bfloat16" else isas[:1]:
                    if args.driver:
                        ours, err = time_driver(args.driver, b, h, s, d, dtype, threads, args.reps, isa)
                    else:
                        ours, err = time_attnprof(args.attnprof, b, h, s, d, dtype, threads, args.extra.split(), isa)
                    f = flops(b, h, s, d)
                    row = dict(threads=threads, batch=b, heads=h, seq=s, head_dim=d, dtype=dtype, isa_cap=isa or "best",
                               pytorch_ms=theirs, attnprof_ms=ours, ratio=theirs / ours, attnprof_rel_err=err)
                    rows.append(row)
                    print(f"| {threads} | {b} | {h} | {s} | {d} | {dtype} | {isa or 'best'} | "
                          f"{theirs:.1f} ({f / theirs / 1e6:.0f}) | {ours:.1f} ({f / ours / 1e6:.0f}) | "
                          f"{theirs / ours:.2f} | {err:.1e} |", flush=True)
    if args.json:
        tmp = args.json + ".tmp"
        with open(tmp, "w") as out:
            json.dump({"rows": rows}, out, indent=1)
        os.replace(tmp, args.json)  # atomic: no partial file if interrupted
    return 0


if __name__ == "__main__":
    sys.exit(main())
