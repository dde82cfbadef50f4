#!/usr/bin/env python3
"""PyTorch vs attnprof on the GPU, in one run, at the anchor shapes (../shared/anchors/README.md).

PyTorch side: the blog's modules (naive, inplace), torch.compile of the in-place module (compile,
paired with our `fused`), and F.scaled_dot_product_attention pinned with sdpa_kernel to one
backend (math, efficient, flash, cudnn). Three input sets rotated, CUDA events, median of 30 runs
(10 at S=16384), the stream held while they are queued (device time alone on both sides, since
session 3; before, a call whose CPU time exceeded its kernel's timed the CPU: PyTorch's cuDNN at
8x16x1024x64 read 0.060 to 0.134 ms across runs for a 57.5 us kernel). Our side: the gpu_bench executable timing the registered variants (the objects `attnprof run`
runs; same method, JSON lines), run from here.
Prints ours, PyTorch's and the ratio PyTorch/ours (> 1: ours is faster), and writes JSON.

Decode rows (issue 21: one query row against a KV cache, Llama's 32 query heads on 8 kv heads,
D 128, bf16, no causal mask: the row sees every key) time --decode-variants against PyTorch's SDPA
backends with enable_gqa, and print the K/V read rate beside the time (2·B·Hkv·Sk·D·2 bytes over
the median). A shape is BxHxSxD (self-attention) or BxHxSqxDxHkvxSk (a decode step); --shapes
takes them, or 'anchors' and 'decode' for the named sets.

  python3 bench/pytorch_side_by_side.py --bench build/bench/gpu_bench --out $OUT/side_by_side.json
  python3 bench/pytorch_side_by_side.py --bench build/bench/gpu_bench --shapes head-dims --variants flash,cudnn
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

ANCHOR_SHAPES = [(8, 16, 1024, 64), (4, 16, 4096, 64), (4, 16, 4096, 128), (1, 16, 16384, 128), (16, 32, 512, 128)]
# Issue 21's head dims beyond 64 and 128 (bf16 causal, against PyTorch's FlashAttention-2 and cuDNN).
HEAD_DIM_SHAPES = [(4, 16, 4096, 96), (1, 16, 16384, 96), (4, 16, 4096, 256), (1, 16, 16384, 256)]
# (B, H, Sq, D, Hkv, Sk): issue 21's decode shapes.
DECODE_SHAPES = [(8, 32, 1, 128, 8, 4096), (8, 32, 1, 128, 8, 32768), (8, 32, 1, 128, 8, 131072),
                 (64, 32, 1, 128, 8, 8192)]
NAMED_SHAPES = {"anchors": ANCHOR_SHAPES, "head-dims": HEAD_DIM_SHAPES, "decode": DECODE_SHAPES}
OURS_TO_TORCH = {
    "naive": "naive", "inplace": "inplace", "math": "math", "fused": "compile",
    "efficient": "efficient", "flash": "flash", "cudnn": "cudnn",
}


class Naive(torch.nn.Module):
    """The blog's naive attention: out-of-place masked_fill (a hidden copy)."""

    def __init__(self, mask):
        super().__init__()
        self.mask = mask

    def forward(self, q, k, v):
        attn = q @ k.transpose(-2, -1)
        attn = attn * (1.0 / math.sqrt(q.size(-1)))
        attn = attn.masked_fill(self.mask, float("-inf"))
        attn = torch.softmax(attn, dim=-1)
        return attn @ v


class InPlace(Naive):
    def forward(self, q, k, v):
        attn = q @ k.transpose(-2, -1)
        attn.mul_(1.0 / math.sqrt(q.size(-1)))
        attn.masked_fill_(self.mask, float("-inf"))
        attn = torch.softmax(attn, dim=-1)
        return attn @ v


def sdpa(backend, causal=True, gqa=False):
    def run(q, k, v):
        with sdpa_kernel([backend]):
            if gqa:
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return run


def is_decode(shape):
    b, h, sq, d, hkv, sk = shape
    return sq != sk or h != hkv


def full_shape(shape):
    """(B, H, Sq, D, Hkv, Sk) from a 4- or 6-tuple."""
    return tuple(shape) if len(shape) == 6 else (shape[0], shape[1], shape[2], shape[3], shape[1], shape[2])


def torch_forward(name, shape):
    b, h, s, d, hkv, sk = shape
    if is_decode(shape):  # SDPA's backends only; the blog's modules take self-attention shapes
        if name not in ("math", "efficient", "flash", "cudnn"):
            raise ValueError(f"{name}: decode rows time PyTorch's SDPA backends only")
        return sdpa({"math": SDPBackend.MATH, "efficient": SDPBackend.EFFICIENT_ATTENTION,
                     "flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}[name],
                    causal=False, gqa=h != hkv)
    mask = torch.triu(torch.ones(s, s, dtype=torch.bool, device="cuda"), diagonal=1)
    if name == "naive":
        return Naive(mask)
    if name == "inplace":
        return InPlace(mask)
    if name == "compile":
        return torch.compile(InPlace(mask))
    return sdpa({"math": SDPBackend.MATH, "efficient": SDPBackend.EFFICIENT_ATTENTION,
                 "flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}[name])


# The GPU is held (a spin kernel of about 20 ms) while the timed forwards are queued, so each
# event pair times the forward's device work alone: where PyTorch's CPU time per call (36-120 us)
# exceeds the kernel's (57 us for cuDNN at 8x16x1024x64), an event pair around a call made on an
# idle GPU would time the CPU instead. gpu_bench holds its stream the same way.
HOLD_CYCLES = 40_000_000


def hold_stream_while_queueing():
    torch.cuda._sleep(HOLD_CYCLES)


def time_torch(name, shape, reps):
    b, h, s, d, hkv, sk = shape
    torch.manual_seed(0)
    sets = [(torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16),
             torch.randn(b, hkv, sk, d, device="cuda", dtype=torch.bfloat16),
             torch.randn(b, hkv, sk, d, device="cuda", dtype=torch.bfloat16)) for _ in range(3)]
    fn = torch_forward(name, shape)
    with torch.no_grad():
        for i in range(3):
            fn(*sets[i % 3])
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        out = fn(*sets[0])
        torch.cuda.synchronize()
        peak_mib = (torch.cuda.max_memory_allocated() - before) / 2**20
        # Error vs fp64 on the first 64 rows of (0, 0) (the anchors' convention: whole-tensor where cheap).
        q, k, v = (t[0:1, 0:1].double() for t in sets[0])
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d)
        if not is_decode(shape):
            scores = scores.masked_fill(torch.triu(torch.ones(s, s, dtype=torch.bool, device="cuda"), 1), float("-inf"))
        ref = torch.softmax(scores, -1) @ v
        got = out[0:1, 0:1].double()
        err = ((got - ref).norm() / ref.norm()).item()
        del out
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        host = []
        hold_stream_while_queueing()
        for i in range(reps):
            starts[i].record()
            t0 = time.perf_counter()
            fn(*sets[i % 3])
            host.append((time.perf_counter() - t0) * 1e6)
            ends[i].record()
        torch.cuda.synchronize()
    ms = sorted(st.elapsed_time(en) for st, en in zip(starts, ends))
    host.sort()
    return {"median_ms": ms[len(ms) // 2], "peak_extra_mib": peak_mib, "host_us_per_fwd": host[len(host) // 2],
            "rel_err_vs_fp64": err}


def run_ours(bench, variants, shapes, reps):
    cmd = [bench, "--variants", ",".join(variants), "--shapes", ",".join("x".join(map(str, s if is_decode(s) else s[:4])) for s in shapes),
           "--reps", str(reps)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        print(proc.stderr, file=sys.stderr)
    else:  # the one-time work our variants report (cuDNN's plan: engine, knob, the configs timed)
        for line in proc.stderr.splitlines():
            if line.startswith("cudnn: plan built"):
                print(line, flush=True)
    rows = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            rows[(r["variant"], r["B"], r["H"], r["S"], r["D"], r.get("Hkv", r["H"]), r.get("Sk", r["S"]))] = r
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True, help="path to the gpu_bench executable")
    ap.add_argument("--variants", default="naive,inplace,math,fused,efficient,flash,cudnn")
    ap.add_argument("--decode-variants", default="efficient,flash,flash@sm80,cudnn",
                    help="the variants of the decode rows (flash@sm80: the tile kernel, no split-KV)")
    ap.add_argument("--shapes", default="anchors,decode",
                    help="'anchors', 'head-dims', 'decode', BxHxSxD or BxHxSqxDxHkvxSk, comma-separated")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    shapes = []
    for item in args.shapes.split(","):
        named = NAMED_SHAPES.get(item)
        shapes += [full_shape(s) for s in named] if named else [full_shape(tuple(int(x) for x in item.split("x")))]
    variants_of = lambda shape: (args.decode_variants if is_decode(shape) else args.variants).split(",")  # noqa: E731
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}", flush=True)
    ours = {}
    for kind in (False, True):  # one gpu_bench run for the self-attention rows, one for the decode rows
        group = [shape for shape in shapes if is_decode(shape) == kind]
        if group:
            ours.update(run_ours(args.bench, variants_of(group[0]), group, args.reps))
    results = []
    for shape in shapes:
        b, h, s, d, hkv, sk = shape
        reps = 10 if max(s, sk) >= 16384 and not is_decode(shape) else args.reps
        variants = variants_of(shape)
        torch_rows = {}
        for v in variants:
            base = v.split("@")[0]  # flash@sm80: our flash with a kernel knob, against the same PyTorch row
            mine = ours.get((v, b, h, s, d, hkv, sk), {"error": "no result from gpu_bench"})
            if base not in torch_rows:
                try:
                    torch_rows[base] = time_torch(OURS_TO_TORCH[base], shape, reps)
                except Exception as e:  # noqa: BLE001 - report and go on (e.g. out of memory)
                    torch_rows[base] = {"error": str(e).splitlines()[0][:200]}
            theirs = torch_rows[base]
            row = {"B": b, "H": h, "S": s, "D": d, "Hkv": hkv, "Sk": sk, "variant": v, "torch_variant": OURS_TO_TORCH[base],
                   "ours": mine, "torch": theirs}
            if "median_ms" in theirs:
                theirs["kv_tbps"] = 2 * b * hkv * sk * d * 2 / (theirs["median_ms"] * 1e-3) / 1e12
            if "median_ms" in mine and "median_ms" in theirs:
                row["ratio_torch_over_ours"] = theirs["median_ms"] / mine["median_ms"]
            results.append(row)
            torch.cuda.empty_cache()
        # Issue 6's bar: every row of this shape against PyTorch's cuDNN backend, when it was timed.
        cudnn = torch_rows.get("cudnn", {})
        for row in results[-len(variants):]:
            if "median_ms" in row["ours"] and "median_ms" in cudnn:
                row["ratio_torch_cudnn_over_ours"] = cudnn["median_ms"] / row["ours"]["median_ms"]
    # Self-attention rows are causal (halved); decode rows see every key.
    flops = lambda r: 4 * r["B"] * r["H"] * r["S"] * r["Sk"] * r["D"] / (2 if r["S"] == r["Sk"] and r["H"] == r["Hkv"] else 1)  # noqa: E731
    print(f"\n{'shape':>22} {'variant':>13} {'ours ms':>9} {'torch ms':>9} {'ratio':>6} {'x cudnn':>7} {'ours TF/s':>9} "
          f"{'KV TB/s':>7} {'torch':>5} {'ours MiB':>9} {'torch MiB':>9} {'ours err':>9} {'torch err':>9}")
    wrong = []
    for r in results:
        o, t = r["ours"], r["torch"]
        decode = r["S"] != r["Sk"] or r["H"] != r["Hkv"]
        shape = f"{r['B']}x{r['H']}x{r['S']}x{r['D']}" + (f" kv{r['Hkv']} sk{r['Sk']}" if decode else "")
        if "median_ms" not in o or "median_ms" not in t:
            print(f"{shape:>22} {r['variant']:>13}  ours: {o.get('error', '')[:60]}  torch: {t.get('error', '')[:60]}")
            continue
        # The issues' correctness bar: error vs fp64 at most 2x PyTorch's same backend's (+2e-4 of slack
        # for rounding at tiny errors). A speed measured on wrong outputs is not a result.
        r["correct"] = o["rel_err_vs_fp64"] <= 2 * t["rel_err_vs_fp64"] + 2e-4
        if not r["correct"]:
            wrong.append(f"{shape} {r['variant']}")
        vs_cudnn = f"{r['ratio_torch_cudnn_over_ours']:7.2f}" if "ratio_torch_cudnn_over_ours" in r else f"{'-':>7}"
        kv = f"{o['kv_tbps']:7.2f} {t['kv_tbps']:5.2f}" if decode and "kv_tbps" in o else f"{'-':>7} {'-':>5}"
        print(f"{shape:>22} {r['variant']:>13} {o['median_ms']:9.3f} {t['median_ms']:9.3f} {r['ratio_torch_over_ours']:6.2f} "
              f"{vs_cudnn} {flops(r) / o['median_ms'] / 1e9:9.1f} {kv} {o['peak_extra_mib']:9.1f} {t['peak_extra_mib']:9.1f} "
              f"{o['rel_err_vs_fp64']:9.1e} {t['rel_err_vs_fp64']:9.1e}{'' if r['correct'] else '  WRONG'}")
    if args.out:
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(results, f, indent=1)
        os.replace(tmp, args.out)
    if wrong:
        print(f"error: outputs beyond 2x PyTorch's error vs fp64 (their speeds are not results): {', '.join(wrong)}",
              file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
