#!/usr/bin/env python3
"""Records small whole-model PyTorch traces on a CUDA GPU, for attnprof's trace tests.

  python3 scripts/record_model_traces.py OUTDIR

Each trace is torch.profiler's Kineto JSON (record_shapes=True), gzipped, of a model that is not
an attention benchmark: a small GPT-style model's training steps (forward, backward, AdamW) with
SDPA pinned to cuDNN, with composed ("naive") attention, and with compiled FlexAttention; a
KV-cache decode loop with grouped-query attention through SDPA's enable_gqa. Beside each trace,
torch's own key_averages table (.txt) and the facts of the run (.json: shapes, steps, versions).
The traces are small (a few steps of a 4-layer model) so they can live under tests/data.
"""
import contextlib
import gzip
import json
import math
import os
import shutil
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile, record_function, schedule

VOCAB, D_MODEL, LAYERS = 1024, 256, 4


class Attention(nn.Module):
    def __init__(self, heads, kv_heads, mode):
        super().__init__()
        self.heads, self.kv_heads, self.mode = heads, kv_heads, mode
        self.head_dim = D_MODEL // heads
        self.q = nn.Linear(D_MODEL, heads * self.head_dim, bias=False)
        self.kv = nn.Linear(D_MODEL, 2 * kv_heads * self.head_dim, bias=False)
        self.o = nn.Linear(heads * self.head_dim, D_MODEL, bias=False)
        self.flex = None

    def forward(self, x, cache=None, pos=0):
        b, s, _ = x.shape
        q = self.q(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k, v = self.kv(x).view(b, s, 2, self.kv_heads, self.head_dim).unbind(2)
        k, v = k.transpose(1, 2), v.transpose(1, 2)
        if cache is not None:  # decode: append to the preallocated cache, attend to all of it
            cache[0][:, :, pos:pos + s] = k
            cache[1][:, :, pos:pos + s] = v
            k, v = cache[0][:, :, :pos + s], cache[1][:, :, :pos + s]
            o = F.scaled_dot_product_attention(q, k, v, is_causal=(s > 1),
                                               enable_gqa=self.kv_heads != self.heads)
        elif self.mode == "sdpa":
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        elif self.mode == "naive":
            scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))
            mask = torch.ones(s, s, dtype=torch.bool, device=x.device).tril()
            scores = scores.masked_fill(~mask, float("-inf"))
            o = torch.softmax(scores, dim=-1) @ v
        elif self.mode == "flex":
            o = self.flex(q, k, v)
        else:
            raise ValueError(self.mode)
        return self.o(o.transpose(1, 2).reshape(b, s, -1))


class Block(nn.Module):
    def __init__(self, heads, kv_heads, mode):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D_MODEL), nn.LayerNorm(D_MODEL)
        self.attn = Attention(heads, kv_heads, mode)
        self.mlp = nn.Sequential(nn.Linear(D_MODEL, 4 * D_MODEL), nn.GELU(), nn.Linear(4 * D_MODEL, D_MODEL))

    def forward(self, x, cache=None, pos=0):
        x = x + self.attn(self.ln1(x), cache, pos)
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, heads=4, kv_heads=4, mode="sdpa"):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D_MODEL)
        self.blocks = nn.ModuleList(Block(heads, kv_heads, mode) for _ in range(LAYERS))
        self.ln = nn.LayerNorm(D_MODEL)
        self.head = nn.Linear(D_MODEL, VOCAB, bias=False)

    def forward(self, idx, caches=None, pos=0):
        x = self.emb(idx)
        for i, blk in enumerate(self.blocks):
            x = blk(x, None if caches is None else caches[i], pos)
        return self.head(self.ln(x))


def save(prof, outdir, name, facts):
    raw = os.path.join(outdir, name + ".json")
    prof.export_chrome_trace(raw)
    with open(raw, "rb") as f, gzip.open(raw + ".gz", "wb", compresslevel=9) as g:
        shutil.copyfileobj(f, g)
    os.remove(raw)
    with open(os.path.join(outdir, name + ".txt"), "w") as f:
        f.write(prof.key_averages().table(sort_by="cuda_time_total", row_limit=-1, max_name_column_width=90))
    facts.update(torch=torch.__version__, cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version(),
                 gpu=torch.cuda.get_device_name())
    with open(os.path.join(outdir, name + ".facts.json"), "w") as f:
        json.dump(facts, f, indent=1)
    print(f"{name}: {os.path.getsize(raw + '.gz')} bytes gzipped", flush=True)


def train(outdir, name, mode, backend=None, batch=8, seq=256, heads=4):
    torch.manual_seed(0)
    model = GPT(heads=heads, kv_heads=heads, mode=mode).cuda()
    if mode == "flex":
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        mask = create_block_mask(lambda b, h, q, k: q >= k, None, None, seq, seq, device="cuda")
        compiled = torch.compile(flex_attention)
        for blk in model.blocks:
            blk.attn.flex = lambda q, k, v, m=mask: compiled(q, k, v, block_mask=m)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    idx = torch.randint(0, VOCAB, (batch, seq + 1), device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(idx[:, :-1])
            loss = F.cross_entropy(logits.float().view(-1, VOCAB), idx[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    ctx = sdpa_kernel([backend]) if backend is not None else contextlib.nullcontext()
    with ctx:
        for _ in range(3):  # compile, plans and allocator warm before the profiler starts
            step()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True,
                     schedule=schedule(wait=1, warmup=1, active=2)) as prof:
            for _ in range(4):
                step()
                prof.step()
        torch.cuda.synchronize()
    save(prof, outdir, name, dict(kind="train", attention=mode, backend=str(backend), batch=batch, seq=seq,
                                  heads=heads, kv_heads=heads, head_dim=D_MODEL // heads, layers=LAYERS,
                                  dtype="bf16 autocast", causal=True, active_steps=2))


@torch.no_grad()
def decode(outdir, name, batch=4, prompt=128, new_tokens=12, heads=8, kv_heads=2):
    torch.manual_seed(0)
    model = GPT(heads=heads, kv_heads=kv_heads, mode="sdpa").cuda().to(torch.bfloat16).eval()
    hd = D_MODEL // heads
    total = prompt + new_tokens + 8

    def run():
        caches = [(torch.zeros(batch, kv_heads, total, hd, device="cuda", dtype=torch.bfloat16),
                   torch.zeros(batch, kv_heads, total, hd, device="cuda", dtype=torch.bfloat16))
                  for _ in range(LAYERS)]
        idx = torch.randint(0, VOCAB, (batch, prompt), device="cuda")
        with record_function("prefill"):
            nxt = model(idx, caches, 0)[:, -1:].argmax(-1)
        return caches, nxt

    run()
    torch.cuda.synchronize()
    caches, nxt = run()
    pos = prompt
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True,
                 schedule=schedule(wait=1, warmup=1, active=new_tokens - 2)) as prof:
        for _ in range(new_tokens):
            with record_function("decode_token"):
                nxt = model(nxt, caches, pos)[:, -1:].argmax(-1)
            pos += 1
            prof.step()
    torch.cuda.synchronize()
    save(prof, outdir, name, dict(kind="decode", attention="sdpa enable_gqa", batch=batch, prompt=prompt,
                                  heads=heads, kv_heads=kv_heads, head_dim=hd, layers=LAYERS, dtype="bf16",
                                  active_steps=new_tokens - 2, first_active_seq_k=prompt + 3))


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = True
    train(outdir, "gpt_train_sdpa_cudnn", "sdpa", SDPBackend.CUDNN_ATTENTION)
    train(outdir, "gpt_train_naive", "naive")
    decode(outdir, "gpt_decode_kvcache_gqa")
    try:
        train(outdir, "gpt_train_flex_compiled", "flex")
    except Exception as e:  # a missing Triton toolchain is reported, the other traces stand
        print(f"gpt_train_flex_compiled: not recorded: {type(e).__name__}: {e}", flush=True)


if __name__ == "__main__":
    main()
