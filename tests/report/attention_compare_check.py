#!/usr/bin/env python3
"""attnprof inspect across traces: `--diff` of two recorded model traces and the per-rank table
of several, checked against this script's own numbers from the raw trace JSON.

  attention_compare_check.py ATTNPROF_BIN MODEL_TRACE_DIR

The per-step attention and step GPU time come from attention_calls_check.py's independent
definitions (expected_per_step); GPU ops per call are counted here from its attention windows.
Rank traces are copies of a recorded training trace written into a temporary directory, each with
a distributedInfo rank and its device events stretched by a known factor (durations and the gaps
between them, so each union of intervals stretches by it too), so each rank's expected times and
the slowest rank follow from the factors and the script's own unions.
"""
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attention_calls_check import DEVICE, MODELS, Trace, check, close, expected_per_step, failures, load, windows  # noqa: E402


def run(binary, *args):
    return subprocess.run([binary, "inspect", "--no-insights", *args], capture_output=True, text=True)


def expected_totals(path, stem):
    """Means per step: step, attention, forward and backward GPU µs, calls and GPU ops per call."""
    kind = MODELS[stem][0]
    t = Trace(path)
    steps = expected_per_step(t, kind)
    n = len(steps)
    out = {k: sum(s[k] for s in steps) / n for k in ("device", "forward", "backward", "attention")}
    ops = {"forward": [0, 0], "backward": [0, 0]}  # GPU ops, calls
    for pass_, tid, start, end in windows(t, kind):
        if t.step_of(start) is None:
            continue
        ops[pass_][1] += 1
        seen = set()
        for l in t.launches:
            c = l["args"]["correlation"]
            if l["tid"] == tid and start <= l["ts"] <= end and c not in seen:
                seen.add(c)
                ops[pass_][0] += sum(1 for d in t.device.get(c, []) if d["cat"] in DEVICE)
    for p, (count, calls) in ops.items():
        out[p + "_calls"] = calls / n
        out[p + "_ops"] = count / calls if calls else None
    return out


def check_diff(binary, directory):
    before, after = "gpt_train_naive", "gpt_train_sdpa_cudnn"
    paths = [os.path.join(directory, s + ".json.gz") for s in (before, after)]
    want = [expected_totals(p, s) for p, s in zip(paths, (before, after))]
    r = run(binary, "--diff", "--format", "json", *paths)
    check(r.returncode == 0, f"--diff json exited {r.returncode}: {r.stderr[:300]}")
    if r.returncode != 0:
        return
    got = json.loads(r.stdout)
    check([t["trace"] for t in got["traces"]] == paths, "--diff json: traces are BEFORE and AFTER in order")
    d = got["diff"]
    for side, w, impl in (("before", want[0], "composed"), ("after", want[1], "cudnn")):
        g = d[side]
        print(f"diff {side}: step {g['step_device_time_us']:.3f} us ({w['device']:.3f}), attention "
              f"{g['attention_device_time_us']:.3f} us ({w['attention']:.3f}), ops/forward call "
              f"{g['forward_gpu_ops_per_call']} ({w['forward_ops']}), ops/backward call "
              f"{g['backward_gpu_ops_per_call']} ({w['backward_ops']})")
        check(g["implementations"] == [impl], f"diff {side}: implementations {g['implementations']}")
        check(close(g["step_device_time_us"], w["device"]), f"diff {side}: step GPU time")
        for k in ("attention", "forward", "backward"):
            check(close(g[k + "_device_time_us"], w[k]), f"diff {side}: {k} GPU time")
        check(close(g["share"], w["attention"] / w["device"]), f"diff {side}: share")
        for p in ("forward", "backward"):
            check(g[p + "_calls"] == w[p + "_calls"], f"diff {side}: {p} calls {g[p + '_calls']}")
            check(close(g[p + "_gpu_ops_per_call"], w[p + "_ops"]), f"diff {side}: GPU ops per {p} call")
    c = d["change"]
    check(c["implementation_changed"] is True, "diff: implementation_changed")
    check(close(c["step_device_time_us"], want[1]["device"] - want[0]["device"]), "diff: step GPU time change")
    check(close(c["step_device_time_relative"], want[1]["device"] / want[0]["device"] - 1), "diff: step relative")
    check(close(c["attention_device_time_us"], want[1]["attention"] - want[0]["attention"]), "diff: attention change")
    check(close(c["attention_device_time_relative"], want[1]["attention"] / want[0]["attention"] - 1),
          "diff: attention relative")
    share_points = 100 * (want[1]["attention"] / want[1]["device"] - want[0]["attention"] / want[0]["device"])
    check(close(c["share_points"], share_points), f"diff: share points {c['share_points']} ({share_points:.3f})")

    r = run(binary, "--diff", *paths)
    check(r.returncode == 0, f"--diff text exited {r.returncode}")
    lines = r.stdout.splitlines()
    print("\n".join(lines[:12]))
    check(lines[0].startswith(f"diff: before {paths[0]} (2 steps), after {paths[1]} (2 steps)"), "diff text: header")
    row = {l[:28].strip(): l[28:] for l in lines[1:12]}
    check("composed -> cuDNN" in row.get("implementation", ""), "diff text: implementation composed -> cuDNN")

    def ms(text):  # the durations of a row, in µs
        return [float(v) * {"ms": 1e3, "µs": 1.0, "ns": 1e-3}[u] for v, u in re.findall(r"([\d.]+) (ms|µs|ns)", text)]

    for label, key in (("step GPU time", "device"), ("attention GPU time", "attention"), ("forward", "forward"),
                       ("backward", "backward")):
        vals = ms(row.get(label, ""))
        check(len(vals) == 3, f"diff text: {label} row has before, after, change: {row.get(label)}")
        if len(vals) == 3:
            check(abs(vals[0] - want[0][key]) <= 0.01 * want[0][key], f"diff text: {label} before {vals[0]}")
            check(abs(vals[1] - want[1][key]) <= 0.01 * want[1][key], f"diff text: {label} after {vals[1]}")
            change = want[1][key] - want[0][key]
            check(abs(vals[2] - abs(change)) <= 0.01 * abs(change), f"diff text: {label} change {vals[2]}")
            pct = re.search(r"\(([+-][\d.]+)%\)", row[label])
            check(pct and abs(float(pct.group(1)) - 100 * change / want[0][key]) <= 0.1,
                  f"diff text: {label} percent {pct and pct.group(1)}")


def check_diff_calls(binary, directory):
    """Decode (4 forward calls a step, no backward) against training (4 and 4): the calls rows."""
    stems = ("gpt_decode_kvcache_gqa", "gpt_train_sdpa_cudnn")
    r = run(binary, "--diff", *(os.path.join(directory, s + ".json.gz") for s in stems))
    check(r.returncode == 0, f"--diff decode/train exited {r.returncode}")
    row = {l[:28].strip(): l[28:].split() for l in r.stdout.splitlines()[2:12]}
    for label, i in (("forward calls", 2), ("backward calls", 3)):
        before, after = MODELS[stems[0]][i], MODELS[stems[1]][i]
        change = "same" if before == after else f"{after - before:+d}"
        check(row.get(label) == [str(before), str(after), change], f"diff calls: {label} {row.get(label)}")
    check(row.get("GPU ops per backward call", [""])[0] == "-", "diff: no backward call before gives '-' ops")


def check_diff_without_steps(binary, directory):
    """A trace with its ProfilerStep#N ranges removed against the same trace with them: one side is
    over the whole trace, the other per step, so no change is computed (null in JSON, '-' in text),
    never a whole-trace total against a per-step mean."""
    src = os.path.join(directory, "gpt_train_sdpa_cudnn.json.gz")
    with tempfile.TemporaryDirectory() as tmp:
        data = load(src)
        data["traceEvents"] = [e for e in data["traceEvents"] if not str(e.get("name", "")).startswith("ProfilerStep#")]
        nostep = os.path.join(tmp, "nostep.json.gz")
        with gzip.open(nostep, "wt", encoding="utf-8") as f:
            json.dump(data, f)
        r = run(binary, "--diff", "--format", "json", nostep, src)
        check(r.returncode == 0, f"--diff without steps exited {r.returncode}: {r.stderr[:300]}")
        if r.returncode != 0:
            return
        change = json.loads(r.stdout)["diff"]["change"]
        check(change["comparable"] is False, f"--diff without steps: comparable {change['comparable']}")
        for key in ("attention_device_time_us", "attention_device_time_relative", "forward_device_time_us",
                    "backward_device_time_us", "step_device_time_us"):
            check(change[key] is None, f"--diff without steps: {key} is {change[key]}, expected null")
        t = run(binary, "--diff", nostep, src)
        row = [line for line in t.stdout.splitlines() if line.startswith("attention GPU time")]
        check(len(row) == 1 and row[0].split()[-1] == "-", f"--diff without steps: text row {row}")
        check("not compared" in t.stdout.splitlines()[0], f"--diff without steps: header {t.stdout.splitlines()[:1]}")
        # The same file twice: every change is none.
        same = json.loads(run(binary, "--diff", "--format", "json", src, src).stdout)["diff"]["change"]
        check(same["comparable"] is True and same["attention_device_time_us"] == 0.0,
              f"--diff of a trace with itself: {same}")


def write_rank(src, dst, rank, factor):
    data = load(src)
    if rank is not None:
        data["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": 3}
    device = [e for e in data["traceEvents"] if e.get("ph") == "X" and e.get("cat") in DEVICE]
    origin = min(e["ts"] for e in device)
    for e in device:  # work stays attributed to its launch, by correlation
        e["ts"] = origin + (e["ts"] - origin) * factor
        e["dur"] = e["dur"] * factor
    with gzip.open(dst, "wt", encoding="utf-8") as f:
        json.dump(data, f)


def check_ranks(binary, directory):
    src = os.path.join(directory, "gpt_train_sdpa_cudnn.json.gz")
    base = expected_totals(src, "gpt_train_sdpa_cudnn")
    # File order a, b, c; distributedInfo ranks 2, 0, 1; rank 0's device work is 1.5 times as long.
    files = (("a.json.gz", 2, 1.0), ("b.json.gz", 0, 1.5), ("c.json.gz", 1, 1.25))
    with tempfile.TemporaryDirectory() as tmp:
        for name, rank, factor in files:
            write_rank(src, os.path.join(tmp, name), rank, factor)
        r = run(binary, "--format", "json", tmp)
        check(r.returncode == 0, f"ranks json exited {r.returncode}: {r.stderr[:300]}")
        if r.returncode == 0:
            got = json.loads(r.stdout)["ranks"]
            check(got["source"] == "distributedInfo", f"ranks: source {got['source']}")
            check([row["rank"] for row in got["rows"]] == [2, 0, 1], "ranks: ranks from distributedInfo")
            for row, (name, rank, factor) in zip(got["rows"], files):
                want = {k: base[k] * factor for k in ("device", "attention", "forward", "backward")}
                w = expected_totals(os.path.join(tmp, name), "gpt_train_sdpa_cudnn")
                print(f"rank {row['rank']}: step {row['step_device_time_us']:.3f} us (x{factor}: {want['device']:.3f}, "
                      f"from the file: {w['device']:.3f}), attention {row['attention_device_time_us']:.3f} us "
                      f"({want['attention']:.3f})")
                check(row["trace"] == os.path.join(tmp, name), f"ranks: trace {row['trace']}")
                for k in ("device", "attention"):
                    check(close(row["step_device_time_us" if k == "device" else "attention_device_time_us"], want[k]),
                          f"rank {rank}: {k} GPU time")
                    check(close(w[k], want[k]), f"rank {rank} file: {k} GPU time scales by {factor}")
            check(got["slowest"]["rank"] == 0 and got["slowest"]["trace"].endswith("b.json.gz"), "ranks: slowest is 0")
            check(got["fastest"]["rank"] == 2, "ranks: fastest is 2")
        r = run(binary, tmp)
        check(r.returncode == 0, f"ranks text exited {r.returncode}")
        tail = r.stdout[r.stdout.find("== ranks =="):]
        print(tail)
        check("(ranks from each trace's distributedInfo;" in tail, "ranks text: rank source")
        slow = re.search(r"slowest rank: (\d+) \((.*?)\): ([\d.]+) ms GPU time per step.*?; \+([\d.]+) (ms|µs) "
                         r"\(\+([\d.]+)%\) over the fastest, rank (\d+)", tail)
        check(slow is not None, "ranks text: slowest rank line")
        if slow:
            check(slow.group(1) == "0" and slow.group(2).endswith("b.json.gz"), "ranks text: slowest is rank 0")
            check(abs(float(slow.group(3)) * 1e3 - 1.5 * base["device"]) <= 0.01 * 1.5 * base["device"],
                  "ranks text: slowest step time")
            check(abs(float(slow.group(6)) - 50.0) <= 0.1, f"ranks text: +{slow.group(6)}% over the fastest")
            check(slow.group(7) == "2", "ranks text: fastest is rank 2")

        # Without distributedInfo the ranks are the file order, and the table says so.
        os.remove(os.path.join(tmp, "c.json.gz"))
        write_rank(src, os.path.join(tmp, "c.json.gz"), None, 3.0)
        r = run(binary, "--format", "json", *(os.path.join(tmp, n) for n in ("c.json.gz", "a.json.gz")))
        got = json.loads(r.stdout)["ranks"] if r.returncode == 0 else None
        check(got is not None and got["source"] == "file order" and [x["rank"] for x in got["rows"]] == [0, 1]
              and "c.json.gz has no distributedInfo rank" in got["note"] and got["slowest"]["rank"] == 0,
              f"ranks by file order: {got and (got['source'], got['note'], got['slowest'])}")

        # A rank that two traces share cannot name either: file order again, naming the rank.
        write_rank(src, os.path.join(tmp, "c.json.gz"), 2, 3.0)
        r = run(binary, "--format", "json", *(os.path.join(tmp, n) for n in ("a.json.gz", "c.json.gz")))
        got = json.loads(r.stdout)["ranks"] if r.returncode == 0 else None
        check(got is not None and got["source"] == "file order" and "rank 2 appears twice" in got["note"]
              and got["slowest"]["rank"] == 1, f"repeated rank: {got and (got['source'], got['note'])}")

        # The directory is read up to --max-traces files.
        r = run(binary, "--max-traces", "2", tmp)
        check(r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1 and "--max-traces" in r.stderr,
              f"--max-traces 2 on 3 files: exit {r.returncode}, stderr {r.stderr!r}")


def main():
    binary, directory = sys.argv[1], sys.argv[2]
    check_diff(binary, directory)
    check_diff_calls(binary, directory)
    check_diff_without_steps(binary, directory)
    check_ranks(binary, directory)
    print(f"{'FAILED' if failures else 'ok'}: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
