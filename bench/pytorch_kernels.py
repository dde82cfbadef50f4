#!/usr/bin/env python3
"""What PyTorch launches for one SDPA backend: kernel names, grid, block, registers, shared memory
and device time per forward (or, with --pass backward, per out.backward(dO) of a forward run
outside the profiled region), from torch.profiler (Kineto), at the given shapes (bf16, causal).

    python3 bench/pytorch_kernels.py --backend cudnn --shapes 8x16x1024x64,16x32x512x128
    python3 bench/pytorch_kernels.py --backend cudnn --pass backward --shapes 16x32x512x128

Used to check that our `cudnn` variant builds the engine config PyTorch's does (issue 5: same
kernel, device time within 3%).
"""
import argparse
import collections
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile

BACKENDS = {"math": SDPBackend.MATH, "efficient": SDPBackend.EFFICIENT_ATTENTION,
            "flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="cudnn", choices=sorted(BACKENDS))
    ap.add_argument("--shapes", default="8x16x1024x64")
    ap.add_argument("--forwards", type=int, default=10, help="passes profiled")
    ap.add_argument("--pass", dest="pass_", default="forward", choices=["forward", "backward"])
    args = ap.parse_args()
    for shape in args.shapes.split(","):
        try:
            b, h, s, d = (int(x) for x in shape.split("x"))
        except ValueError:
            sys.exit(f"--shapes {shape}: expected BxHxSxD, e.g. 8x16x1024x64")
        backward = args.pass_ == "backward"
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=backward)
                   for _ in range(3))
        d_out = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)

        def forward():
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)

        with sdpa_kernel(BACKENDS[args.backend]):
            for _ in range(5):
                out = forward()
                if backward:
                    out.backward(d_out)
            torch.cuda.synchronize()
            outs = [forward() for _ in range(args.forwards)] if backward else []
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                for i in range(args.forwards):
                    if backward:
                        q.grad = k.grad = v.grad = None  # no accumulation kernels in the profile
                        outs[i].backward(d_out)
                    else:
                        forward()
                torch.cuda.synchronize()
        kernels = collections.defaultdict(list)
        for e in prof.events():
            if e.device_type == torch.autograd.DeviceType.CUDA:
                kernels[e.name].append(e.device_time)
        print(f"{shape} {args.backend} {args.pass_}:")
        for name, times in sorted(kernels.items(), key=lambda kv: -sum(kv[1])):
            times.sort()
            print(f"  {len(times):3d}x median {times[len(times) // 2]:8.1f} us  {name}")
        trace = f"/tmp/pytorch_kernels_{shape}_{args.pass_}.json"
        prof.export_chrome_trace(trace)
        import json
        with open(trace) as f:
            events = json.load(f)["traceEvents"]
        seen = set()
        for e in events:
            if e.get("cat") == "kernel" and e["name"] not in seen:
                seen.add(e["name"])
                a = e.get("args", {})
                print(f"    grid {a.get('grid')} block {a.get('block')} registers {a.get('registers per thread')} "
                      f"shared {a.get('shared memory')} dynamic? {a.get('dynamic shared memory', '')}  {e['name'][:90]}")
        api = collections.Counter(e["name"] for e in events if e.get("cat") == "cuda_runtime" or e.get("cat") == "cuda_driver")
        print(f"    runtime/driver calls in {args.forwards} {args.pass_} passes: {dict(api)}")


if __name__ == "__main__":
    main()
