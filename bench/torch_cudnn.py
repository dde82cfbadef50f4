#!/usr/bin/env python3
"""The directory of the libcudnn PyTorch loads, so our binaries can run on the same cuDNN.

The system's cuDNN may be older than PyTorch's wheel (the H200 image: /lib has 9.14, PyTorch 2.11's
wheel 9.19), and cuDNN puts the same graph on different engines in different versions (the causal
SDPA backward: engine 2 on 9.14, engine 6 on 9.19, 5% apart at 16x32x512x128). Found by running
one cuDNN SDPA call and reading /proc/self/maps. Run as a script, it prints the directory.

  LD_LIBRARY_PATH=$(python3 bench/torch_cudnn.py) build/bench/gpu_bench --variants cudnn
"""
import os
import sys


def loaded_cudnn_dir():
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q = torch.zeros(1, 1, 64, 64, device="cuda", dtype=torch.bfloat16)
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        F.scaled_dot_product_attention(q, q, q, is_causal=True)
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "/libcudnn.so" in line}
    if len(paths) != 1:
        raise RuntimeError(f"PyTorch's libcudnn: expected one mapped libcudnn.so, found {sorted(paths) or 'none'}")
    return os.path.dirname(paths.pop())


if __name__ == "__main__":
    try:
        print(loaded_cudnn_dir())
    except Exception as e:  # noqa: BLE001 - one line naming what failed
        print(f"torch_cudnn.py: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
