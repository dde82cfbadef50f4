"""Loads q.npy, k.npy, v.npy, out.npy written by `attnprof run --dump DIR` and checks out.npy
against an fp64 attention computed here with numpy. Usage: check_dump.py DIR CAUSAL TOLERANCE."""
import sys

import numpy as np

directory, causal, tolerance = sys.argv[1], sys.argv[2] == "1", float(sys.argv[3])
q, k, v, out = (np.load(f"{directory}/{name}.npy").astype(np.float64) for name in ("q", "k", "v", "out"))
batch, heads, seq_q, dim = q.shape
kv_heads, seq_k = k.shape[1], k.shape[2]
group = heads // kv_heads
k = np.repeat(k, group, axis=1)
v = np.repeat(v, group, axis=1)
scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(dim)
if causal:
    mask = np.triu(np.ones((seq_q, seq_k), dtype=bool), 1)
    scores = np.where(mask, -np.inf, scores)
scores -= scores.max(axis=-1, keepdims=True)
weights = np.exp(scores)
weights /= weights.sum(axis=-1, keepdims=True)
reference = weights @ v
rel_err = np.linalg.norm(out - reference) / np.linalg.norm(reference)
print(f"shape {q.shape} kv {k.shape} rel_err {rel_err:.3e}")
sys.exit(0 if rel_err <= tolerance else 1)
