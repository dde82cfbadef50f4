#!/usr/bin/env python3
"""gpu_bench --pass backward and --pass train on the GPU, at small shapes, for every variant with a
GPU backward: each row is a result (no error), its gradients are all written and within the issue's
bf16 bar of the fp64 reference (1e-2 relative; the shapes are small enough that gpu_bench checks
them), its backward is the training step's median less the forward's, its spreads are ordered, and
its TFLOP/s are 2.5x (backward) or 3.5x (train) the forward's FLOPs over its median. Without a GPU
gpu_bench exits 2 naming why, and this check exits 77 (ctest's skip).

  python3 tests/bench/gpu_bench_backward_check.py build/cuda/bench/gpu_bench
"""
import json
import subprocess
import sys

VARIANTS = "naive,inplace,math,fused,efficient,flash,cudnn"
# An odd S (partial tiles, the causal diagonal inside a tile) and D 128.
SHAPES = [(2, 4, 200, 64), (1, 4, 256, 128)]
FACTOR = {"backward": 2.5, "train": 3.5}


def run(bench, pass_name):
    shapes = ",".join("x".join(map(str, s)) for s in SHAPES)
    proc = subprocess.run([bench, "--pass", pass_name, "--variants", VARIANTS, "--shapes", shapes, "--reps", "5",
                           "--warmup", "1"], capture_output=True, text=True)
    if proc.returncode == 2 and "no usable GPU" in proc.stderr:
        print(f"SKIP: {proc.stderr.strip()}")
        sys.exit(77)
    if proc.returncode != 0:
        sys.exit(f"gpu_bench --pass {pass_name} exited {proc.returncode}: {proc.stderr.strip()}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def check(rows, pass_name):
    failures = []
    want = len(SHAPES) * len(VARIANTS.split(","))
    if len(rows) != want:
        failures.append(f"--pass {pass_name}: {len(rows)} rows, want {want}")
    for r in rows:
        what = f"--pass {pass_name} {r['variant']} {r['B']}x{r['H']}x{r['S']}x{r['D']}"
        if "error" in r:
            failures.append(f"{what}: error {r['error']}")
            continue
        if r["pass"] != pass_name:
            failures.append(f"{what}: pass {r['pass']}")
        if r["grad_unwritten"] != 0:
            failures.append(f"{what}: {r['grad_unwritten']} gradient elements never written")
        if not r["grad_checked"]:
            failures.append(f"{what}: gradients not checked ({r.get('grad_unchecked_why')})")
        elif r["grad_rel_err"] is None or r["grad_rel_err"] > 1e-2:
            failures.append(f"{what}: grad_rel_err {r['grad_rel_err']} (dq {r['grad_rel_err_dq']}, "
                            f"dk {r['grad_rel_err_dk']}, dv {r['grad_rel_err_dv']}) over 1e-2")
        steps = ["train"] + (["fwd"] if pass_name == "backward" else [])
        for step in steps:
            ms = [r[f"{step}_{k}_ms"] for k in ("min", "p10", "median", "p90", "max")]
            if ms != sorted(ms) or ms[0] <= 0:
                failures.append(f"{what}: {step} min/p10/median/p90/max {ms} not positive and ordered")
        expected = r["train_median_ms"] - (r["fwd_median_ms"] if pass_name == "backward" else 0)
        if abs(r["median_ms"] - expected) > 2e-4:  # each printed to 4 decimals
            failures.append(f"{what}: median_ms {r['median_ms']}, want train - forward = {expected}")
        if r["median_ms"] > 0:
            flops = FACTOR[pass_name] * 4 * r["B"] * r["H"] * r["S"] * r["S"] * r["D"] / 2  # causal
            want_tflops = flops / (r["median_ms"] * 1e-3) / 1e12
            if r["tflops"] is None or abs(r["tflops"] - want_tflops) > 0.05 + 1e-3 * want_tflops:
                failures.append(f"{what}: tflops {r['tflops']}, want {want_tflops:.2f} "
                                f"({FACTOR[pass_name]}x the forward's FLOPs over the median)")
        if r["kept_mib"] < 0 or r["peak_extra_mib"] < r["kept_mib"]:
            failures.append(f"{what}: kept {r['kept_mib']} MiB, peak {r['peak_extra_mib']} MiB")
    return failures


def main():
    bench = sys.argv[1]
    failures = []
    for pass_name in ("backward", "train"):
        failures += check(run(bench, pass_name), pass_name)
    for f in failures:
        print(f"FAIL {f}")
    if failures:
        sys.exit(1)
    print(f"ok: {len(SHAPES) * len(VARIANTS.split(','))} rows per pass, backward and train")


if __name__ == "__main__":
    main()
