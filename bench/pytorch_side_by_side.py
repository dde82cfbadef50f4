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
--rounds N alternates the two sides N times (every shape ours, then every shape PyTorch's, N times),
so a drift of the card's clocks over the run falls on both: a row's times are each side's middle
round (the median of its rounds' medians, that round's fields whole), its ratios and its target
verdict the median of the rounds' paired ratios (ours and PyTorch's of the same round), each
round's ratio printed beside it; a round's wrong output (error vs fp64) makes the row wrong.
gpu_bench runs on PyTorch's own libcudnn (bench/torch_cudnn.py finds it; --ours-cudnn system keeps
the loader's), so the cudnn rows compare one library's engines; the header says which cuDNN each
side loaded.

Decode rows (issue 21: one query row against a KV cache, Llama's 32 query heads on 8 kv heads,
D 128, bf16, no causal mask: the row sees every key) time --decode-variants against PyTorch's SDPA
backends with enable_gqa, and print the K/V read rate beside the time (2·B·Hkv·Sk·D·2 bytes over
the median). A shape is BxHxSxD (self-attention) or BxHxSqxDxHkvxSk (a decode step); --shapes
takes them, or 'anchors' and 'decode' for the named sets.

--pass backward (issue 20, item 5; self-attention shapes only, the anchors by default): the backward
on both sides, as backward time = training-step median - forward median. Ours: gpu_bench --pass
backward (a step = forward_for_backward then backward on a dO drawn like q, k, v; the forward timed
= forward_for_backward). PyTorch's: q, k, v leaves with requires_grad, a step = the module's forward
then out.backward(dO) (the .grad of q, k, v cleared first, so nothing accumulates), the forward
timed = the same forward under autograd (it saves what the backward reads; the graph is dropped).
Both sides: three sets rotated, CUDA events, the stream held while the steps are queued, the
forward's and the step's loops timed alike; TFLOP/s on 2.5x the forward's FLOPs. Gradients: the
error vs fp64, ours by gpu_bench through variants::check_gradients (every element of a small
problem, a fixed sample of a large one, its grad_check_scope), PyTorch's over batch 0's kv head 0
(dQ of its query heads, dK, dV) by fp64 autograd of that sub-problem on the GPU. A row PyTorch refuses
(no kernel for the shape, out of memory) prints one line saying so; gpu_bench's memory preflight
refuses ours the same way. Beside each row: the issue's target (flash >= 1.0x PyTorch's cuDNN,
efficient >= 1.0x PyTorch's efficient, cudnn within 3% of PyTorch's cuDNN, naive, inplace, math
and fused within 15% of PyTorch's) and the issue's PyTorch 2.11 TFLOP/s at the anchors.

  python3 bench/pytorch_side_by_side.py --bench build/bench/gpu_bench --out $OUT/side_by_side.json
  python3 bench/pytorch_side_by_side.py --bench build/bench/gpu_bench --shapes head-dims --variants flash,cudnn
  python3 bench/pytorch_side_by_side.py --bench build/bench/gpu_bench --pass backward --reps 20 --out bwd.json
"""
import argparse
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

import torch_cudnn
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
# Issue 20's backward targets: our backward's median at most FACTOR x the median of PyTorch's row
# paired with OURS (OURS_TO_TORCH) at every anchor.
BACKWARD_TARGETS = {  # our variant: (the variant whose PyTorch row is its bar, factor)
    "flash": ("cudnn", 1.0), "efficient": ("efficient", 1.0), "cudnn": ("cudnn", 1.03),
    "naive": ("naive", 1.15), "inplace": ("inplace", 1.15), "math": ("math", 1.15), "fused": ("fused", 1.15),
}
# The backward TFLOP/s of PyTorch 2.11 on the H200 that issue 20 quotes, at ANCHOR_SHAPES in order (for
# reference beside this run's).
ISSUE_BACKWARD_TFLOPS = {"cudnn": (225, 371, 489, 534, 217), "flash": (139, 226, 258, 312, 118),
                         "efficient": (66, 90, 116, 129, 64)}


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


def timed(reps, step):
    """Device ms of each of reps calls of step(i), CUDA events around each, all queued behind the
    hold; and the CPU us each call took."""
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    host = []
    hold_stream_while_queueing()
    for i in range(reps):
        starts[i].record()
        t0 = time.perf_counter()
        step(i)
        host.append((time.perf_counter() - t0) * 1e6)
        ends[i].record()
    torch.cuda.synchronize()
    return [st.elapsed_time(en) for st, en in zip(starts, ends)], host


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
        ms, host = timed(reps, lambda i: fn(*sets[i % 3]))
    ms.sort()
    host.sort()
    return {"median_ms": ms[len(ms) // 2], "peak_extra_mib": peak_mib, "host_us_per_fwd": host[len(host) // 2],
            "rel_err_vs_fp64": err}


def spread(ms):
    """The median and the spread (p10, p90 by nearest rank, min, max) of ms, named as gpu_bench names them
    after its train_ and fwd_ prefixes."""
    ms = sorted(ms)
    at = lambda q: ms[round(q * (len(ms) - 1))]  # noqa: E731
    return {"median_ms": statistics.median(ms), "p10_ms": at(0.1), "p90_ms": at(0.9), "min_ms": ms[0], "max_ms": ms[-1]}


# PyTorch's gradients are checked where the fp64 sub-problem's S x Sk scores of one query-head group
# take at most this many bytes (every anchor: 2 GiB at S = 16384).
GRAD_CHECK_MAX_BYTES = 4 << 30


def torch_grad_error(shape, q, k, v, dout):
    """Worst of dQ's, dK's and dV's |x - ref| / |ref| over batch 0's kv head 0 and its group of query
    heads, against fp64 autograd of that sub-problem; None where the
    sub-problem's scores would exceed GRAD_CHECK_MAX_BYTES. q, k, v hold the gradients of a step with dout."""
    b, h, s, d, hkv, sk = shape
    group = h // hkv
    if group * s * sk * 8 > GRAD_CHECK_MAX_BYTES:
        return None
    leaves = [t[0:1, 0:n].detach().double().requires_grad_() for t, n in ((q, group), (k, 1), (v, 1))]
    q64, k64, v64 = leaves
    scores = (q64 @ k64.transpose(-2, -1)) / math.sqrt(d)  # k64 broadcast over the group: dK sums it
    scores = scores.masked_fill(torch.triu(torch.ones(s, sk, dtype=torch.bool, device="cuda"), 1), float("-inf"))
    (torch.softmax(scores, -1) @ v64).backward(dout[0:1, 0:group].double())
    errs = [((got[0:1, 0:n].double() - ref.grad).norm() / ref.grad.norm()).item()
            for got, ref, n in ((q.grad, q64, group), (k.grad, k64, 1), (v.grad, v64, 1))]
    return float("nan") if any(math.isnan(e) for e in errs) else max(errs)


def time_torch_backward(name, shape, reps):
    """PyTorch's backward as a training step's median less its forward's, timed alike (see the top)."""
    b, h, s, d, hkv, sk = shape
    torch.manual_seed(0)

    def normal(*size):
        return torch.randn(*size, device="cuda", dtype=torch.bfloat16)

    sets = [(normal(b, h, s, d).requires_grad_(), normal(b, hkv, sk, d).requires_grad_(),
             normal(b, hkv, sk, d).requires_grad_(), normal(b, h, s, d)) for _ in range(3)]
    fn = torch_forward(name, shape)

    def forward(i):  # what a step's forward keeps for the backward is dropped with its output
        q, k, v, _ = sets[i % 3]
        fn(q, k, v)

    def train(i):
        q, k, v, dout = sets[i % 3]
        q.grad = k.grad = v.grad = None
        fn(q, k, v).backward(dout)

    for i in range(3):  # warm-up (torch.compile compiles the forward and the backward here)
        train(i)
    train(0)
    torch.cuda.synchronize()
    err = torch_grad_error(shape, *sets[0])
    # Peak memory of one step beyond what was live before it (its output and gradients included).
    q1, k1, v1, _ = sets[1]
    q1.grad = k1.grad = v1.grad = None
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    train(1)
    torch.cuda.synchronize()
    peak_mib = (torch.cuda.max_memory_allocated() - before) / 2**20
    fwd_ms, _ = timed(reps, forward)
    train_ms, host = timed(reps, train)
    fwd, step = spread(fwd_ms), spread(train_ms)
    row = {"median_ms": step["median_ms"] - fwd["median_ms"], "reps": reps, "peak_extra_mib": peak_mib,
           "host_us_per_step": statistics.median(host), "grad_rel_err": err}
    row.update({f"train_{key}": value for key, value in step.items()})
    row.update({f"fwd_{key}": value for key, value in fwd.items()})
    return row


def run_ours(bench, variants, shapes, reps, reps_large, pass_name, cudnn_dir):
    """gpu_bench's rows, and the cuDNN version it loaded (its first stderr line); cudnn_dir, when
    given, goes first on LD_LIBRARY_PATH, so it loads that libcudnn."""
    env = dict(os.environ)
    if cudnn_dir:
        env["LD_LIBRARY_PATH"] = cudnn_dir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    cmd = [bench, "--variants", ",".join(variants), "--shapes", ",".join("x".join(map(str, s if is_decode(s) else s[:4])) for s in shapes),
           "--reps", str(reps), "--reps-large", str(reps_large), "--pass", pass_name]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    loaded = None
    for line in proc.stderr.splitlines():
        if line.startswith("gpu_bench: cuDNN ") and line.endswith(" loaded"):
            loaded = int(line.split()[2])
    if proc.returncode != 0:
        print(proc.stderr, file=sys.stderr)
    else:  # the one-time work our variants report (cuDNN's plan: engine, knob, the configs timed)
        for line in proc.stderr.splitlines():
            if line.startswith(("cudnn: plan built", "cudnn: forward with Stats")):
                print(line, flush=True)
    rows = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            rows[(r["variant"], r["B"], r["H"], r["S"], r["D"], r.get("Hkv", r["H"]), r.get("Sk", r["S"]))] = r
    return rows, loaded


def write_json(path, results):
    if path:
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(results, f, indent=1)
        os.replace(tmp, path)


def backward_correct(o, t):
    """Ours' gradients as a result: every element written, and where gpu_bench checked them, the error
    vs fp64 at most 2x PyTorch's same row's (+2e-4; the issue's bf16 bar 1e-2 where PyTorch's is not
    known). None where gpu_bench did not check them (nothing more to say)."""
    if o.get("grad_unwritten", 0) != 0:
        return False
    if not o.get("grad_checked"):
        return None
    ours, theirs = o.get("grad_rel_err"), t.get("grad_rel_err")  # None: NaN on our side
    if ours is None:
        return False
    if theirs is None or math.isnan(theirs):
        return ours <= 1e-2
    return ours <= 2 * theirs + 2e-4


def print_backward(results, backward_flops):
    """The backward table; returns the rows whose gradients are not a result."""
    print(f"\n{'shape':>16} {'variant':>13} {'ours ms':>8} {'torch ms':>8} {'ratio':>6} {'x cudnn':>7} {'ours TF/s':>9} "
          f"{'torch TF/s':>10} {'issue TF/s':>10} {'target':>20} {'ours train/fwd ms':>17} {'torch train/fwd ms':>18} "
          f"{'ours MiB':>9} {'torch MiB':>9} {'ours gerr':>9} {'torch gerr':>10}")
    wrong = []
    for r in results:
        o, t = r["ours"], r["torch"]
        shape = f"{r['B']}x{r['H']}x{r['S']}x{r['D']}"
        if "median_ms" not in o or "median_ms" not in t:
            said = lambda x: x["error"][:100] if "error" in x else f"{x['median_ms']:.3f} ms"  # noqa: E731
            print(f"{shape:>16} {r['variant']:>13}  ours: {said(o)}  torch: {said(t)}")
            continue
        r["correct"] = every_round_correct(r, backward_correct)
        if r["correct"] is False:
            wrong.append(f"{shape} {r['variant']}")
        vs_cudnn = f"{r['ratio_torch_cudnn_over_ours']:7.2f}" if "ratio_torch_cudnn_over_ours" in r else f"{'-':>7}"
        issue = f"{r['issue_torch_tflops']:10d}" if "issue_torch_tflops" in r else f"{'-':>10}"
        target = r.get("target")
        verdict = lambda met: "noise" if met is None else "met" if met else "MISSED"  # noqa: E731
        target = (f"{verdict(target['met'])} <={target['max_ms_ratio']:.2f}x {target['against']}"
                  if target else "-")
        ours_err = (f"{o['grad_rel_err']:9.1e}" if o.get("grad_rel_err") is not None else f"{'NaN':>9}") \
            if o.get("grad_checked") else f"{'unchecked':>9}"
        torch_err = f"{t['grad_rel_err']:10.1e}" if t.get("grad_rel_err") is not None else f"{'-':>10}"
        steps = lambda x: f"{x['train_median_ms']:.3f}/{x['fwd_median_ms']:.3f}"  # noqa: E731
        rate = lambda ms: backward_flops(r) / ms / 1e9 if ms > 0 else float("nan")  # noqa: E731
        print(f"{shape:>16} {r['variant']:>13} {o['median_ms']:8.3f} {t['median_ms']:8.3f} "
              f"{r.get('ratio_torch_over_ours', float('nan')):6.2f} "
              f"{vs_cudnn} {rate(o['median_ms']):9.1f} {rate(t['median_ms']):10.1f} "
              f"{issue} {target:>20} {steps(o):>17} {steps(t):>18} {o['peak_extra_mib']:9.1f} {t['peak_extra_mib']:9.1f} "
              f"{ours_err} {torch_err}{'  WRONG' if r['correct'] is False else ''}{rounds_text(r)}")
    return wrong


def time_torch_rows(shape, variants, backward, reps):
    """PyTorch's row for each of the variants' PyTorch counterparts at shape (a refusal: its error)."""
    rows = {}
    for v in variants:
        base = v.split("@")[0]
        if base in rows:
            continue
        try:
            rows[base] = (time_torch_backward if backward else time_torch)(OURS_TO_TORCH[base], shape, reps)
        except Exception as e:  # noqa: BLE001 - report and go on (a backend without a kernel, out of memory)
            # A backend's refusal is PyTorch's "No available kernel" (a RuntimeError), said as it is.
            why = "out of memory, not run" if isinstance(e, torch.cuda.OutOfMemoryError) else type(e).__name__
            rows[base] = {"error": f"{why}: {str(e).splitlines()[0][:200]}"}
        # torch.compile's graphs of this shape go before the next (each shape and round compiles a new
        # module: past Dynamo's recompile limit it would fall back to eager); with a backward, the
        # autograd graphs too.
        if base == "fused":
            torch._dynamo.reset()
        if backward:
            gc.collect()
        torch.cuda.empty_cache()
    return rows


def middle_round(rows):
    """Of one row's rounds, the round whose median is the rounds' median (the lower middle of an even
    count), whole, so its fields stay one measurement's; with every round's median beside it. A round
    without a time (an error) is the row when every round has one, else left out."""
    timed = sorted((r for r in rows if "median_ms" in r), key=lambda r: r["median_ms"])
    if not timed:
        return rows[-1]
    row = dict(timed[(len(timed) - 1) // 2])
    if len(rows) > 1:
        row["round_medians_ms"] = [r.get("median_ms") for r in rows]
    return row


def paired_median(ratios):
    """The median of a row's per-round ratios (the rounds with both times, above 0), or None."""
    timed = [x for x in ratios if x is not None and x > 0]
    return statistics.median(timed) if timed else None


def every_round_correct(r, check):
    """check(ours, torch) over every round of row r (its middle rows alone with one round): False if
    any round is False, None if no round could be checked, else True."""
    verdicts = [check(o, t) for o, t in r.get("round_rows", [(r["ours"], r["torch"])])]
    if any(v is False for v in verdicts):
        return False
    return None if all(v is None for v in verdicts) else True


def forward_correct(o, t):
    """The issues' correctness bar for a forward: error vs fp64 at most 2x PyTorch's same backend's
    (+2e-4 of slack for rounding at tiny errors); None where a side has no error measured."""
    if "rel_err_vs_fp64" not in o or "rel_err_vs_fp64" not in t:
        return None
    return o["rel_err_vs_fp64"] <= 2 * t["rel_err_vs_fp64"] + 2e-4


def round_ratios(ours, theirs):
    """PyTorch's median over ours, round by round (None where a side has no time)."""
    return [t["median_ms"] / o["median_ms"] if "median_ms" in t and o.get("median_ms", 0) > 0 else None
            for o, t in zip(ours, theirs)]


def rounds_text(r):
    """The rounds' ratios of a row (PyTorch's median over ours, each round's; x cudnn: over PyTorch's
    cuDNN), or "" with one round."""
    said = []
    for key, name in (("round_ratios", "ratio"), ("round_ratios_cudnn", "x cudnn")):
        ratios = r.get(key, [])
        if len(ratios) > 1:
            said.append(f"{name} " + "/".join("-" if x is None else f"{x:.3f}" for x in ratios))
    return "  rounds: " + ", ".join(said) if said else ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True, help="path to the gpu_bench executable")
    ap.add_argument("--variants", default="naive,inplace,math,fused,efficient,flash,cudnn")
    ap.add_argument("--decode-variants", default="efficient,flash,flash@sm80,cudnn",
                    help="the variants of the decode rows (flash@sm80: the tile kernel, no split-KV)")
    ap.add_argument("--shapes", default=None,
                    help="'anchors', 'head-dims', 'decode', BxHxSxD or BxHxSqxDxHkvxSk, comma-separated "
                         "(default: anchors,decode; with --pass backward: anchors)")
    ap.add_argument("--pass", dest="pass_name", choices=("forward", "backward"), default="forward",
                    help="backward: the backward as training step - forward, on both sides")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--reps-large", type=int, default=10, help="the repetitions at S >= 16384 (self-attention)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="alternate ours and PyTorch's this many times (each round: every shape ours, then every "
                         "shape PyTorch's); a row's times are each side's middle round, its ratios the median of "
                         "the rounds' paired ratios")
    ap.add_argument("--ours-cudnn", choices=("torch", "system"), default="torch",
                    help="the libcudnn gpu_bench loads: PyTorch's (default; the same library, so the same "
                         "engines) or the one the loader finds")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    backward = args.pass_name == "backward"
    if args.shapes is None:
        args.shapes = "anchors" if backward else "anchors,decode"
    if args.reps < 1 or args.reps_large < 1:
        ap.error(f"--reps {args.reps} / --reps-large {args.reps_large}: each takes an integer >= 1")
    if args.rounds < 1:
        ap.error(f"--rounds {args.rounds}: takes an integer >= 1")
    shapes = []
    for item in args.shapes.split(","):
        named = NAMED_SHAPES.get(item)
        shapes += [full_shape(s) for s in named] if named else [full_shape(tuple(int(x) for x in item.split("x")))]
    if backward and any(is_decode(shape) for shape in shapes):
        ap.error("--pass backward: --shapes takes self-attention shapes BxHxSxD ('anchors', 'head-dims'); "
                 "decode rows time the forward only")
    variants_of = lambda shape: (args.decode_variants if is_decode(shape) else args.variants).split(",")  # noqa: E731
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}", flush=True)
    cudnn_dir = None
    if args.ours_cudnn == "torch":
        try:
            cudnn_dir = torch_cudnn.loaded_cudnn_dir()
        except Exception as e:  # noqa: BLE001 - said, then ours runs on the loader's cuDNN
            print(f"PyTorch's libcudnn not found ({type(e).__name__}: {e}): ours runs on the system's", flush=True)
    ours_rounds, torch_rounds, ours_cudnn = [], [], set()
    for n in range(args.rounds):
        if args.rounds > 1:
            print(f"round {n + 1} of {args.rounds}", flush=True)
        ours = {}
        for kind in (False, True):  # one gpu_bench run for the self-attention rows, one for the decode rows
            group = [shape for shape in shapes if is_decode(shape) == kind]
            if group:
                rows, loaded = run_ours(args.bench, variants_of(group[0]), group, args.reps, args.reps_large,
                                        args.pass_name, cudnn_dir)
                ours.update(rows)
                ours_cudnn.add(loaded)
        ours_rounds.append(ours)
        torch_rounds.append({shape: time_torch_rows(shape, variants_of(shape), backward,
                                                    args.reps_large if max(shape[2], shape[5]) >= 16384 and not is_decode(shape)
                                                    else args.reps)
                             for shape in shapes})
        if args.rounds > 1:  # each round's times as it ends, so a run cut short still says them
            for shape in shapes:
                for v in variants_of(shape):
                    o = ours.get((v,) + shape, {})
                    t = torch_rounds[-1][shape][v.split("@")[0]]
                    said = lambda x: f"{x['median_ms']:.4f}" if "median_ms" in x else "-"  # noqa: E731
                    ratio = round_ratios([o], [t])[0]
                    name = "x".join(map(str, shape if is_decode(shape) else shape[:4]))
                    print(f"round {n + 1}: {name} {v} ours {said(o)} torch {said(t)} ms"
                          f"{f', ratio {ratio:.3f}' if ratio else ''}", flush=True)
    same = ours_cudnn == {torch.backends.cudnn.version()}
    print(f"ours: cuDNN {', '.join(str(v) for v in sorted(ours_cudnn, key=str))} loaded "
          f"({'from ' + cudnn_dir if cudnn_dir else 'the system library'})"
          f"{'' if same else ': NOT the cuDNN PyTorch runs, so the cudnn rows compare different libraries'}",
          flush=True)
    results = []
    for shape in shapes:
        b, h, s, d, hkv, sk = shape
        variants = variants_of(shape)
        torch_rows = {base: middle_round([rounds[shape][base] for rounds in torch_rounds])
                      for base in torch_rounds[0][shape]}
        for v in variants:
            base = v.split("@")[0]  # flash@sm80: our flash with a kernel knob, against the same PyTorch row
            key = (v, b, h, s, d, hkv, sk)
            mine = middle_round([rounds.get(key, {"error": "no result from gpu_bench"}) for rounds in ours_rounds])
            theirs = torch_rows[base]
            row = {"B": b, "H": h, "S": s, "D": d, "Hkv": hkv, "Sk": sk, "variant": v, "torch_variant": OURS_TO_TORCH[base],
                   "ours": mine, "torch": theirs,
                   "cudnn_loaded": {"ours": sorted(ours_cudnn, key=str), "torch": torch.backends.cudnn.version()}}
            if "median_ms" in theirs and not backward:
                theirs["kv_tbps"] = 2 * b * hkv * sk * d * 2 / (theirs["median_ms"] * 1e-3) / 1e12
            if "median_ms" in mine and "median_ms" in theirs and mine["median_ms"] > 0:
                row["ratio_torch_over_ours"] = theirs["median_ms"] / mine["median_ms"]
            if args.rounds > 1:  # the ratio of each round's pair, and their median as the row's
                mine_rounds = [o.get(key, {}) for o in ours_rounds]
                row["round_rows"] = [(o, t[shape][base]) for o, t in zip(mine_rounds, torch_rounds)]
                row["round_ratios"] = round_ratios(mine_rounds, [t[shape][base] for t in torch_rounds])
                row.pop("ratio_torch_over_ours", None)
                if paired_median(row["round_ratios"]) is not None:
                    row["ratio_torch_over_ours"] = paired_median(row["round_ratios"])
                if "cudnn" in torch_rounds[0][shape]:
                    row["round_ratios_cudnn"] = round_ratios(mine_rounds, [t[shape]["cudnn"] for t in torch_rounds])
            if backward and (b, h, s, d) in ANCHOR_SHAPES and OURS_TO_TORCH[base] in ISSUE_BACKWARD_TFLOPS:
                row["issue_torch_tflops"] = ISSUE_BACKWARD_TFLOPS[OURS_TO_TORCH[base]][ANCHOR_SHAPES.index((b, h, s, d))]
            results.append(row)
        # Issue 6's bar: every row of this shape against PyTorch's cuDNN backend, when it was timed.
        cudnn = torch_rows.get("cudnn", {})
        for row in results[-len(variants):]:
            if "median_ms" in row["ours"] and "median_ms" in cudnn and row["ours"]["median_ms"] > 0:
                row["ratio_torch_cudnn_over_ours"] = cudnn["median_ms"] / row["ours"]["median_ms"]
            if "round_ratios_cudnn" in row:
                row.pop("ratio_torch_cudnn_over_ours", None)
                if paired_median(row["round_ratios_cudnn"]) is not None:
                    row["ratio_torch_cudnn_over_ours"] = paired_median(row["round_ratios_cudnn"])
            bar, factor = BACKWARD_TARGETS.get(row["variant"].split("@")[0], (None, 0))
            against = torch_rows.get(bar, {})
            if backward and "median_ms" in row["ours"] and "median_ms" in against:
                # No verdict (None, printed "noise") where train - forward is at or below 0 (noise, not a
                # time) or, with rounds, where no round timed both sides.
                ours_ms, torch_ms = row["ours"]["median_ms"], against["median_ms"]
                met = ours_ms <= factor * torch_ms if ours_ms > 0 and torch_ms > 0 else None
                if args.rounds > 1:  # the median of the rounds' paired ratios against the bar
                    paired = paired_median(round_ratios([o for o, _ in row["round_rows"]],
                                                        [t[shape].get(bar, {}) for t in torch_rounds]))
                    met = None if paired is None else paired * factor >= 1.0
                row["target"] = {"against": OURS_TO_TORCH[bar], "max_ms_ratio": factor, "met": met}
    # Self-attention rows are causal (halved); decode rows see every key.
    flops = lambda r: 4 * r["B"] * r["H"] * r["S"] * r["Sk"] * r["D"] / (2 if r["S"] == r["Sk"] and r["H"] == r["Hkv"] else 1)  # noqa: E731
    if backward:
        wrong = print_backward(results, lambda r: 2.5 * flops(r))
        write_json(args.out, results)
        if wrong:
            print(f"error: gradients unwritten or beyond 2x PyTorch's error vs fp64 (their speeds are not results): "
                  f"{', '.join(wrong)}", file=sys.stderr)
            sys.exit(1)
        return
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
        # A speed measured on wrong outputs is not a result (forward_correct: the issues' bar).
        # A round where PyTorch's row has no error (refused in that round only) is held to the middle
        # round's (the inputs, and so PyTorch's error, are the same every round).
        r["correct"] = every_round_correct(
            r, lambda o, t: forward_correct(o, t if "rel_err_vs_fp64" in t else r["torch"])) is not False
        if not r["correct"]:
            wrong.append(f"{shape} {r['variant']}")
        vs_cudnn = f"{r['ratio_torch_cudnn_over_ours']:7.2f}" if "ratio_torch_cudnn_over_ours" in r else f"{'-':>7}"
        kv = f"{o['kv_tbps']:7.2f} {t['kv_tbps']:5.2f}" if decode and "kv_tbps" in o else f"{'-':>7} {'-':>5}"
        print(f"{shape:>22} {r['variant']:>13} {o['median_ms']:9.3f} {t['median_ms']:9.3f} {r.get('ratio_torch_over_ours', float('nan')):6.2f} "
              f"{vs_cudnn} {flops(r) / o['median_ms'] / 1e9:9.1f} {kv} {o['peak_extra_mib']:9.1f} {t['peak_extra_mib']:9.1f} "
              f"{o['rel_err_vs_fp64']:9.1e} {t['rel_err_vs_fp64']:9.1e}{'' if r['correct'] else '  WRONG'}{rounds_text(r)}")
    write_json(args.out, results)
    if wrong:
        print(f"error: outputs beyond 2x PyTorch's error vs fp64 (their speeds are not results): {', '.join(wrong)}",
              file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
