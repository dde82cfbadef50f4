#!/usr/bin/env python3
"""Writes a Kineto-style trace of about SIZE_MB megabytes (plain JSON) for the reader benchmark.

Each step mirrors PyTorch's naive-attention trace (bench input only, not a measurement): a
ProfilerStep#N and attn_fwd user_annotation, nested cpu_op events with Kineto's args, a
cudaLaunchKernel / cuLaunchKernelEx per device op, kernels with their launch footprint on stream
7, a memcpy and a memset, ac2g flows and the gpu_user_annotation mirror.

usage: trace_gen.py OUT.json SIZE_MB
"""
import sys

OPS = [  # (name, children, launches) per forward
    ("aten::transpose", ["aten::as_strided"], None),
    ("aten::matmul", ["aten::expand", "aten::as_strided", "aten::reshape", "aten::view", "aten::bmm"],
     "nvjet_sm90_tst_64x512_64x2_1x2_h_bz_coopB_NNT"),
    ("aten::mul", [], "void at::native::vectorized_elementwise_kernel<8, at::native::BinaryFunctor<c10::BFloat16>>"),
    ("aten::masked_fill", ["aten::clone", "aten::empty_like", "aten::empty", "aten::copy_", "aten::masked_fill_"],
     "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<masked_fill>>"),
    ("aten::softmax", ["aten::_softmax"],
     "void (anonymous namespace)::softmax_warp_forward<c10::BFloat16, c10::BFloat16, float, 10, false, false>"),
    ("aten::matmul", ["aten::expand", "aten::as_strided", "aten::reshape", "aten::_reshape_alias", "aten::bmm"],
     "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT"),
]


def us(ns):
    return "%d.%03d" % (ns // 1000, ns % 1000)


def main():
    out_path, size_mb = sys.argv[1], float(sys.argv[2])
    target = int(size_mb * 1e6)
    pid, tid = 515, 515
    t = 5165424235049688
    ext = 1
    corr = 57
    written = 0
    f = open(out_path, "w")

    def w(text):
        nonlocal written
        f.write(text)
        written += len(text)

    w('{\n  "schemaVersion": 1,\n  "deviceProperties": [\n    {\n      "id": 0, "name": "NVIDIA H200", '
      '"totalGlobalMem": 150109880320,\n      "computeMajor": 9, "computeMinor": 0,\n      '
      '"maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,\n      "regsPerBlock": 65536, '
      '"warpSize": 32,\n      "sharedMemPerBlock": 49152, "numSms": 132\n    , "regsPerMultiprocessor": 65536, '
      '"sharedMemPerBlockOptin": 232448, "sharedMemPerMultiprocessor": 233472\n    }\n  ],\n'
      '  "cuda_driver_version": 13000,\n  "displayTimeUnit": "ms",\n  "baseTimeNanoseconds": 1790857026000000000,\n'
      '  "traceEvents": [\n')
    first = True
    step = 2
    gpu_t = t + 100000
    idx = 0

    def event(text):
        nonlocal first
        w(("" if first else ",\n") + text)
        first = False

    def cpu(cat, name, ts, dur):
        nonlocal ext, idx
        event('  {\n    "ph": "X", "cat": "%s", "name": "%s", "pid": %d, "tid": %d,\n    "ts": %s, "dur": %s,\n'
              '    "args": {\n      "External id": %d,"Record function id": 0, "Ev Idx": %d\n    }\n  }'
              % (cat, name, pid, tid, us(ts), us(dur), ext, idx))
        ext += 1
        idx += 1

    while written < target:
        step_start = t
        cpu("user_annotation", "ProfilerStep#%d" % step, t, 300000)
        cpu("user_annotation", "attn_fwd", t + 1000, 290000)
        c = t + 3000
        fwd_gpu_start = gpu_t
        for name, children, kernel in OPS:
            cpu("cpu_op", name, c, 40000)
            cc = c + 500
            for child in children:
                cpu("cpu_op", child, cc, 3000)
                cc += 3500
            if kernel:
                api = "cuLaunchKernelEx" if kernel.startswith("nvjet") else "cudaLaunchKernel"
                cat = "cuda_driver" if api.startswith("cu") and not api.startswith("cuda") else "cuda_runtime"
                lt = cc
                event('  {\n    "ph": "X", "cat": "%s", "name": "%s", "pid": %d, "tid": %d,\n    "ts": %s, "dur": %s,\n'
                      '    "args": {\n      "External id": %d,  "cbid": 211, "correlation": %d\n    }\n  }'
                      % (cat, api, pid, tid, us(lt), us(5000), ext - 1, corr))
                event('  {\n    "ph": "X", "cat": "kernel", "name": "%s", "pid": 0, "tid": 7,\n    "ts": %s, "dur": %s,\n'
                      '    "args": {\n      "External id": %d,\n      "queued": 0, "device": 0, "context": 1,\n'
                      '      "stream": 7, "correlation": %d,\n      "registers per thread": 168,\n'
                      '      "shared memory": 99328,\n      "blocks per SM": 0.969697,\n      "warps per SM": 3.878788,\n'
                      '      "grid": [128, 1, 1],\n      "block": [128, 1, 1],\n      "est. achieved occupancy %%": 6\n'
                      '    }\n  }' % (kernel, us(gpu_t), us(80000), ext - 1, corr))
                event('  {\n    "ph": "f", "id": %d, "pid": 0, "tid": 7, "ts": %s,\n    "cat": "ac2g", "name": "ac2g", "bp": "e"\n  }'
                      % (corr, us(gpu_t)))
                event('  {\n    "ph": "s", "id": %d, "pid": %d, "tid": %d, "ts": %s,\n    "cat": "ac2g", "name": "ac2g"\n  }'
                      % (corr, pid, tid, us(lt)))
                corr += 1
                gpu_t += 85000
            c += 45000
        event('  {\n    "ph": "X", "cat": "gpu_user_annotation", "name": "attn_fwd", "pid": 0, "tid": 7,\n'
              '    "ts": %s, "dur": %s,\n    "args": {\n      "External id": %d\n    }\n  }'
              % (us(fwd_gpu_start), us(gpu_t - fwd_gpu_start), ext))
        step += 1
        t = step_start + 310000
        gpu_t = max(gpu_t, t + 100000)
    w('\n  ],\n  "traceName": "%s"\n}\n' % out_path)
    f.close()
    print("wrote %s: %.1f MB, %d steps, %d events" % (out_path, written / 1e6, step - 2, idx), file=sys.stderr)


if __name__ == "__main__":
    main()
