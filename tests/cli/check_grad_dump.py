"""Loads q, k, v, do, dq, dk, dv (.npy) written by `attnprof run --pass backward --dump DIR` and
checks dq, dk, dv against fp64 gradients of out = softmax(q·kᵀ/√D, causal top-left)·v computed
here with numpy (GQA: k and v repeated per query head, their gradients summed back).
Usage: check_grad_dump.py DIR CAUSAL TOLERANCE."""
import sys

import numpy as np

directory, causal, tolerance = sys.argv[1], sys.argv[2] == "1", float(sys.argv[3])
q, k, v, do, dq, dk, dv = (np.load(f"{directory}/{name}.npy").astype(np.float64)
                           for name in ("q", "k", "v", "do", "dq", "dk", "dv"))
batch, heads, seq_q, dim = q.shape
kv_heads, seq_k = k.shape[1], k.shape[2]
assert do.shape == q.shape and dq.shape == q.shape, (do.shape, dq.shape)
assert dk.shape == k.shape and dv.shape == v.shape, (dk.shape, dv.shape)
group = heads // kv_heads
ke, ve = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
scale = 1.0 / np.sqrt(dim)
scores = q @ ke.transpose(0, 1, 3, 2) * scale
if causal:
    scores = np.where(np.triu(np.ones((seq_q, seq_k), dtype=bool), 1), -np.inf, scores)
scores -= scores.max(axis=-1, keepdims=True)
p = np.exp(scores)
p /= p.sum(axis=-1, keepdims=True)
dp = do @ ve.transpose(0, 1, 3, 2)
ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True)) * scale
ref_dq = ds @ ke
ref_dk = (ds.transpose(0, 1, 3, 2) @ q).reshape(batch, kv_heads, group, seq_k, dim).sum(axis=2)
ref_dv = (p.transpose(0, 1, 3, 2) @ do).reshape(batch, kv_heads, group, seq_k, dim).sum(axis=2)
worst = 0.0
for name, got, ref in (("dq", dq, ref_dq), ("dk", dk, ref_dk), ("dv", dv, ref_dv)):
    err = np.linalg.norm(got - ref) / np.linalg.norm(ref)
    print(f"{name} {got.shape} rel_err {err:.3e}")
    worst = max(worst, err) if np.isfinite(err) else np.inf
sys.exit(0 if worst <= tolerance else 1)
