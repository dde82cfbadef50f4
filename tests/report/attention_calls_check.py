#!/usr/bin/env python3
"""attnprof inspect finds the attention calls of whole-model traces (tests/data/model-traces) and
their GPU time per step; this script works the same numbers out on its own, from the raw trace
JSON, and compares.

  attention_calls_check.py ATTNPROF_BIN MODEL_TRACE_DIR [PUBLIC_TRACE_DIR]

Independent of attnprof's finder: an attention window is defined here more simply — the SDPA
op not nested in another SDPA op, the SDPA backward's autograd range, every op whose name holds
"flex_attention", and for composed attention the span from the last top-level matmul before a
4-D softmax to the first one after it (backward: BmmBackward0 around SoftmaxBackward0). A window's
GPU work is every kernel/memcpy/memset launched (by correlation) from its thread inside it; a
step's is every one launched inside the ProfilerStep#N range. A GPU time is how long the work kept
the GPU busy: the length of the union of its [ts, ts + dur) intervals (overlapping work counted
once), over a call, over a step's forward calls, its backward calls, all its calls, and the whole
step. Each step's attention time, forward and backward, must agree within 1%; the calls' counts, implementations and shapes must match the
run's facts (.facts.json, written when the trace was recorded). On the public traces of other
models (PUBLIC_TRACE_DIR) attnprof must find no attention call at all.
"""
import glob
import gzip
import json
import os
import subprocess
import sys

DEVICE = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCH = ("cuda_runtime", "cuda_driver")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def covered(intervals):
    """Length of the union of (start, end) intervals: merged after sorting by start."""
    total, run_start, run_end = 0.0, None, None
    for start, end in sorted(i for i in intervals if i[1] > i[0]):
        if run_end is not None and start <= run_end:
            run_end = max(run_end, end)
            continue
        if run_end is not None:
            total += run_end - run_start
        run_start, run_end = start, end
    return total + (run_end - run_start if run_end is not None else 0.0)


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def inspect(binary, path):
    r = subprocess.run([binary, "inspect", "--format", "json", "--no-insights", path], capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stdout[-2000:], r.stderr[-2000:])
        raise SystemExit(f"attnprof inspect {path} exited {r.returncode}")
    return json.loads(r.stdout)


class Trace:
    def __init__(self, path):
        events = [e for e in load(path)["traceEvents"] if e.get("ph") == "X"]
        self.ops = [e for e in events if e.get("cat") == "cpu_op"]
        self.launches = [e for e in events if e.get("cat") in LAUNCH and "correlation" in e.get("args", {})]
        self.device = {}
        for e in events:
            if e.get("cat") in DEVICE:
                self.device.setdefault(e["args"].get("correlation"), []).append(e)
        self.steps = sorted((e for e in events if e.get("cat") == "user_annotation"
                             and e["name"].startswith("ProfilerStep#")), key=lambda e: e["ts"])

    def work(self, tid, start, end):
        """(start, end) µs of the GPU work launched from thread `tid` within [start, end] (µs), each
        correlation once."""
        seen, out = set(), []
        for l in self.launches:
            c = l["args"]["correlation"]
            if l["tid"] == tid and start <= l["ts"] <= end and c not in seen:
                seen.add(c)
                out += [(d["ts"], d["ts"] + d["dur"]) for d in self.device.get(c, [])]
        return out

    def top_level(self, tid):
        ops = sorted((o for o in self.ops if o["tid"] == tid), key=lambda o: (o["ts"], -o["dur"]))
        out, end = [], -1.0
        for o in ops:
            if o["ts"] >= end:
                out.append(o)
                end = o["ts"] + o["dur"]
        return out

    def step_of(self, ts):
        for i, s in enumerate(self.steps):
            if s["ts"] <= ts <= s["ts"] + s["dur"]:
                return i
        return None


def windows(t, kind):
    """(pass, tid, start, end) of each attention call, by this script's own definitions."""
    out = []
    names = lambda o: o["name"]
    if kind == "sdpa":
        sdpa = [o for o in t.ops if o["name"] == "aten::scaled_dot_product_attention"]
        for o in sdpa:
            nested = any(p is not o and p["tid"] == o["tid"] and p["ts"] <= o["ts"] and
                         o["ts"] + o["dur"] <= p["ts"] + p["dur"] for p in sdpa)
            if not nested:
                out.append(("forward", o["tid"], o["ts"], o["ts"] + o["dur"]))
        for o in t.ops:
            if o["name"].startswith("autograd::engine::evaluate_function: ScaledDotProduct"):
                out.append(("backward", o["tid"], o["ts"], o["ts"] + o["dur"]))
    elif kind == "flex":
        for o in t.ops:
            if "flex_attention" in o["name"]:
                out.append(("backward" if "backward" in o["name"] else "forward", o["tid"], o["ts"], o["ts"] + o["dur"]))
    elif kind == "composed":
        for tid in {o["tid"] for o in t.ops}:
            top = t.top_level(tid)
            for i, o in enumerate(top):
                dims = o.get("args", {}).get("Input Dims") or [[]]
                if o["name"] == "aten::softmax" and len(dims[0]) == 4:
                    before = [p for p in top[:i] if names(p) == "aten::matmul"][-1]
                    after = [p for p in top[i + 1:] if names(p) == "aten::matmul"][0]
                    out.append(("forward", tid, before["ts"], after["ts"] + after["dur"]))
                if o["name"].endswith(": SoftmaxBackward0"):
                    bmm = lambda p: p["name"].endswith(": BmmBackward0")
                    before = [p for p in top[:i] if bmm(p)][-1]
                    after = [p for p in top[i + 1:] if bmm(p)][0]
                    out.append(("backward", tid, before["ts"], after["ts"] + after["dur"]))
    return out


def expected_per_step(t, kind):
    """Per step, GPU µs: "device" (all its work), "forward", "backward" and "attention" (its calls')."""
    work = [{"device": [], "forward": [], "backward": []} for _ in t.steps]
    for i, s in enumerate(t.steps):
        start, end = s["ts"], s["ts"] + s["dur"]
        seen = set()
        for l in t.launches:
            c = l["args"]["correlation"]
            if start <= l["ts"] <= end and c not in seen:
                seen.add(c)
                work[i]["device"] += [(d["ts"], d["ts"] + d["dur"]) for d in t.device.get(c, [])]
    for pass_, tid, start, end in windows(t, kind):
        i = t.step_of(start)
        if i is not None:
            work[i][pass_] += t.work(tid, start, end)
    return [{"device": covered(w["device"]), "forward": covered(w["forward"]), "backward": covered(w["backward"]),
             "attention": covered(w["forward"] + w["backward"])} for w in work]


MODELS = {  # trace stem: (kind, implementation, forward calls a step, backward calls a step)
    "gpt_train_sdpa_cudnn": ("sdpa", "cudnn", 4, 4),
    "gpt_train_naive": ("composed", "composed", 4, 4),
    "gpt_decode_kvcache_gqa": ("sdpa", "cudnn", 4, 0),
    "gpt_train_flex_compiled": ("flex", "flex", 4, 4),
}


def close(a, b):
    return abs(a - b) <= 0.01 * max(abs(b), 1e-9)


def check_model(binary, directory, stem):
    kind, impl, fwd_calls, bwd_calls = MODELS[stem]
    path = os.path.join(directory, stem + ".json.gz")
    facts = load(os.path.join(directory, stem + ".facts.json"))
    t = Trace(path)
    want = expected_per_step(t, kind)
    got = inspect(binary, path)["attention"]
    check(len(got["steps"]) == len(want) > 0, f"{stem}: {len(got['steps'])} steps, expected {len(want)}")
    for g, w in zip(got["steps"], want):
        name = f"{stem} {g['name']}"
        print(f"{name}: attention {g['attention_device_time_us']:.3f} us (expected {w['attention']:.3f}) "
              f"of {g['device_time_us']:.3f} us (expected {w['device']:.3f}); forward {g['forward_device_time_us']:.3f}"
              f" ({w['forward']:.3f}), backward {g['backward_device_time_us']:.3f} ({w['backward']:.3f})")
        check(close(g["device_time_us"], w["device"]), f"{name}: step GPU time")
        check(close(g["forward_device_time_us"], w["forward"]), f"{name}: forward attention GPU time")
        check(close(g["backward_device_time_us"], w["backward"]), f"{name}: backward attention GPU time")
        check(close(g["attention_device_time_us"], w["attention"]), f"{name}: attention GPU time")
        check(close(g["share"], w["attention"] / w["device"]), f"{name}: share")
        check(g["forward_calls"] == fwd_calls and g["backward_calls"] == bwd_calls,
              f"{name}: {g['forward_calls']} forward / {g['backward_calls']} backward calls, "
              f"expected {fwd_calls} / {bwd_calls}")
    for c in got["calls"]:
        label = f"{stem} {c['pass']} call in {c['step']}"
        check(c["implementation"] == impl, f"{label}: implementation {c['implementation']}, expected {impl}")
        s = c["shape"]
        check(s["batch"] == facts["batch"], f"{label}: batch {s['batch']}")
        check(s["heads"] == facts["heads"] and s["kv_heads"] == facts["kv_heads"],
              f"{label}: heads {s['heads']}/{s['kv_heads']}")
        check(s["head_dim"] == facts["head_dim"], f"{label}: head_dim {s['head_dim']}")
        check(c["dtype"] == "bf16", f"{label}: dtype {c['dtype']}")
        check(c["kernels"] >= 1, f"{label}: no kernel")
        if facts["kind"] == "train":
            check(s["seq_q"] == facts["seq"] and s["seq_k"] == facts["seq"], f"{label}: seq {s['seq_q']}/{s['seq_k']}")
            if kind == "sdpa":
                check(c["causal"] is True, f"{label}: causal {c['causal']}")
        else:  # decode: one new query row against a cache that grows by one per step
            check(s["seq_q"] == 1 and s["seq_k"] >= facts["first_active_seq_k"], f"{label}: seq {s['seq_q']}/{s['seq_k']}")
            check(c["causal"] is False, f"{label}: causal {c['causal']}")


def main():
    binary, directory = sys.argv[1], sys.argv[2]
    for stem in MODELS:
        check_model(binary, directory, stem)
    if len(sys.argv) > 3 and os.path.isdir(sys.argv[3]):
        for path in sorted(glob.glob(os.path.join(sys.argv[3], "*.json*"))):
            r = subprocess.run([binary, "inspect", "--format", "json", "--no-insights", path], capture_output=True,
                               text=True)
            if r.returncode != 0:  # only the execution trace (not a Kineto trace) may be refused
                check("execution_trace" in path, f"{os.path.basename(path)}: inspect exited {r.returncode}: "
                      f"{r.stderr.strip()[:300]}")
                continue
            got = json.loads(r.stdout)
            for one in got.get("traces", [got]):
                calls = one["attention"]["calls"]
                check(not calls, f"{os.path.basename(path)}: {len(calls)} attention calls in a model without attention")
    elif len(sys.argv) > 3:
        print(f"public traces: {sys.argv[3]} not present; skipped")
    print(f"{'FAILED' if failures else 'ok'}: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
