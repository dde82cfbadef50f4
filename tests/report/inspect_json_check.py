#!/usr/bin/env python3
"""attnprof inspect's JSON on the recorded whole-model traces (tests/data/model-traces): the keys
of "attention" and of each insight, no "forwards" block (they hold no attn_fwd range), and
`--range NAME` on real record_function ranges.

  inspect_json_check.py ATTNPROF_BIN MODEL_TRACE_DIR

--range: each range's GPU time is worked out here from the raw JSON — the union of the intervals
of every kernel, memcpy and memset whose launch (by correlation) starts inside one of the ranges
of that name — and must agree with inspect's within 1%, as must "forwards", which reads the ranges named together.
Keys: "attention" holds exactly the keys docs/attention-calls.md lists (the steps' and the calls'
as the issue set them, plus the calls' documented extras), and each insight exactly {"code",
"text", "about"}, "about" naming kernels or ops in the trace.
"""
import json
import os
import subprocess
import sys

from attention_calls_check import DEVICE, LAUNCH, check, close, covered, failures, load

STEP_KEYS = {"name", "device_time_us", "attention_device_time_us", "share", "forward_calls", "backward_calls",
             "forward_device_time_us", "backward_device_time_us"}
CALL_KEYS = {"step", "pass", "implementation", "shape", "dtype", "causal", "kernels", "device_time_us"}
CALL_EXTRAS = {"op", "memcpy", "memset", "kernel_names"}  # documented beside the keys
SHAPE_KEYS = {"batch", "heads", "kv_heads", "seq_q", "seq_k", "head_dim"}

RANGES = {  # trace stem: record_function ranges it holds
    "gpt_decode_kvcache_gqa": ["decode_token"],
    "gpt_train_sdpa_cudnn": ["Optimizer.step#AdamW.step", "Optimizer.zero_grad#AdamW.zero_grad"],
}


def run(binary, *args):
    r = subprocess.run([binary, "inspect", "--format", "json", *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"attnprof inspect {' '.join(args)} exited {r.returncode}: {r.stderr[-2000:]}")
    return json.loads(r.stdout)


def range_times(path, name):
    """(count, GPU µs of all their work together, Σ of each range's own GPU µs) of the user ranges
    named `name`, by launch time inside them."""
    events = [e for e in load(path)["traceEvents"] if e.get("ph") == "X"]
    ranges = [(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") == "user_annotation" and e["name"] == name]
    device = {}
    for e in events:
        if e.get("cat") in DEVICE:
            device.setdefault(e["args"].get("correlation"), []).append(e)
    work, seen = [[] for _ in ranges], set()  # per range
    for e in events:
        c = e.get("args", {}).get("correlation")
        inside = [i for i, (a, b) in enumerate(ranges) if a <= e["ts"] <= b]
        if e.get("cat") in LAUNCH and c not in seen and inside:
            seen.add(c)
            work[inside[0]] += [(d["ts"], d["ts"] + d["dur"]) for d in device.get(c, [])]
    return len(ranges), covered([i for w in work for i in w]), sum(covered(w) for w in work)


def names_in(path):
    out = set()
    for e in load(path)["traceEvents"]:
        out.add(e.get("name"))
    return out


def main():
    binary, directory = sys.argv[1], sys.argv[2]
    for stem, names in RANGES.items():
        path = os.path.join(directory, stem + ".json.gz")
        args = [a for n in names for a in ("--range", n)]
        inspected = run(binary, "--no-insights", *args, path)
        got = {r["name"]: r for r in inspected["ranges"]}
        all_count, all_each = 0, 0.0
        for name in names:
            count, total, each = range_times(path, name)
            all_count, all_each = all_count + count, all_each + each
            g = got[name]
            print(f"{stem} --range {name}: {g['count']} ranges ({count}), {g['device_time_us']:.3f} us of GPU time "
                  f"({total:.3f}), {g['device_time_per_range_us']:.3f} us per range")
            check(count > 0 and g["count"] == count, f"{stem} {name}: {g['count']} ranges, expected {count}")
            check(close(g["device_time_us"], total), f"{stem} {name}: GPU time {g['device_time_us']}, expected {total}")
            check(close(g["device_time_per_range_us"], each / count), f"{stem} {name}: GPU time per range")
        # "forwards" reads the named ranges together (these neither nest nor overlap).
        fw = inspected.get("forwards", {})
        check(fw.get("count") == all_count, f"{stem}: forwards count {fw.get('count')}, expected {all_count}")
        check(close(fw.get("device_time_per_forward_us", -1), all_each / all_count),
              f"{stem}: forwards device time {fw.get('device_time_per_forward_us')}, expected {all_each / all_count}")
    for stem in sorted(f[:-len(".json.gz")] for f in os.listdir(directory) if f.endswith(".json.gz")):
        path = os.path.join(directory, stem + ".json.gz")
        got = run(binary, path)
        # No attn_fwd range in a model's trace: no "forwards" block (its means would be zeros).
        count, _, _ = range_times(path, "attn_fwd")
        check(count == 0 and "forwards" not in got, f"{stem}: {count} attn_fwd ranges, forwards {got.get('forwards')}")
        attention = got["attention"]
        check(set(attention) == {"steps", "calls"}, f"{stem}: attention keys {sorted(attention)}")
        for s in attention["steps"]:
            check(set(s) == STEP_KEYS, f"{stem}: step keys {sorted(set(s) ^ STEP_KEYS)} differ")
        for c in attention["calls"]:
            check(set(c) == CALL_KEYS | CALL_EXTRAS, f"{stem}: call keys {sorted(set(c) ^ (CALL_KEYS | CALL_EXTRAS))}")
            check(set(c["shape"]) == SHAPE_KEYS, f"{stem}: shape keys {sorted(c['shape'])}")
        check(attention["steps"] and attention["calls"], f"{stem}: no attention steps or calls")
        known = names_in(path)
        for i in got["insights"]:
            check(set(i) == {"code", "text", "about"}, f"{stem} {i.get('code')}: keys {sorted(i)}")
            check(i["about"] and all(a in known for a in i["about"]),
                  f"{stem} {i['code']}: about {i['about']} names nothing in the trace")
            print(f"{stem} {i['code']}: about {[a[:60] for a in i['about']]}")
    print(f"{'FAILED' if failures else 'ok'}: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
