// The CPU FlashAttention-2 backward (flash or efficient) at one shape beside the OpenBLAS sgemm
// rate measured in the same run (the ceilings' measurement, src/run/ceilings_measure.cpp), as
// issue 20 asks: flash fp32 backward ≥ 0.5× sgemm. Prints one line per figure, then one JSON object.
//
//   nice build/cpu/bench/bench_cpu_backward --variant flash --batch 1 --heads 4 --seq 1024 \
//       --head-dim 64 --dtype fp32 --causal 1 --threads 2 --reps 20
//
// Backward FLOPs = 2.5 × the forward's (AttentionSpec::flops(): 4·B·H·Sq·Sk·D, halved for causal):
// five GEMMs instead of two. Two rates: wall clock, and FLOPs per second of process CPU time times
// the thread count (what the run gives on cores no other job time-slices; see
// cpu_variants_bench.cpp). The sgemm ceiling is a wall-clock rate (measured before and after the
// backward), so the ratios use wall clock: medians against the mean of the two sgemm medians, and
// the best backward against the best sgemm run.
#include <attnprof/attention.h>
#include <attnprof/error.h>
#include <attnprof/profiler.h>
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "bench_options.h"
#include "cpu/attention_backward.h"
#include "cpu/cpu_features.h"
#include "ops/ops.h"
#include "run/ceilings_measure.h"
#include "variants/reference_backward.h"

using attnprof::bench::option;
using attnprof::bench::text_option;

namespace {
double process_cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}
}  // namespace

int main(int argc, char** argv) {
  using namespace attnprof;
  return bench::guarded_main([&] {
    const AttentionSpec spec = bench::spec_option(argc, argv, 4, "fp32");
    const int reps = static_cast<int>(option(argc, argv, "--reps", 20));
    const bool check = option(argc, argv, "--check", 1) != 0;
    const std::string variant = text_option(argc, argv, "--variant", "flash");
    if (variant != "flash" && variant != "efficient") {
      throw UsageError("--variant: '" + variant + "' has no CPU FlashAttention-2 backward; allowed: flash, efficient");
    }
    const bool flash = variant == "flash";
    if (option(argc, argv, "--threads", 1) < 1 || reps < 1) throw UsageError("--threads and --reps: 1 or more");
    const int threads = bench::apply_thread_and_isa_options(argc, argv);

    // sgemm measured before and after the backward, so a load that comes or goes mid-run shifts both
    const report::Ceilings before = measure_cpu_ceilings();

    const AttentionInputs in = make_inputs(spec, 0);
    Tensor dout = make_output(spec);
    fill_normal(dout, 99);
    Tensor out = make_output(spec);
    Tensor lse = Tensor::empty({spec.batch, spec.heads, spec.seq_q}, DType::fp32, Device::cpu);
    if (flash) ops::flash_attention_out(spec, out, in.q, in.k, in.v, &lse);
    else ops::efficient_attention_out(spec, out, in.q, in.k, in.v, &lse);
    AttentionSpec kv = spec;
    kv.heads = spec.kv_heads;
    kv.seq_q = spec.seq_k;
    Tensor dq = make_output(spec), dk = make_output(kv), dv = make_output(kv);
    auto backward = [&] {
      if (flash) ops::flash_attention_backward(spec, in.q, in.k, in.v, out, lse, dout, dq, dk, dv);
      else ops::efficient_attention_backward(spec, in.q, in.k, in.v, out, lse, dout, dq, dk, dv);
    };
    backward();  // warm-up: first touch of every buffer
    std::vector<double> ms;
    const double cpu0 = process_cpu_seconds();
    for (int i = 0; i < reps; ++i) {
      const std::int64_t t0 = profiler::now_ns();
      backward();
      ms.push_back(static_cast<double>(profiler::now_ns() - t0) / 1e6);
    }
    const double cpu_seconds = process_cpu_seconds() - cpu0;
    const report::Ceilings after = measure_cpu_ceilings();
    const double sgemm_gflops = (before.matmul_tflops + after.matmul_tflops) / 2 * 1e3;
    const double sgemm_best = std::max(before.matmul_spread.max, after.matmul_spread.max) * 1e3;
    std::sort(ms.begin(), ms.end());
    const double median = ms[ms.size() / 2];
    const double flops = 2.5 * spec.flops();
    const double gflops = flops / median / 1e6;
    const double best_gflops = flops / ms.front() / 1e6;
    const double gflops_cpu = flops * reps / cpu_seconds * threads / 1e9;
    const double err = check ? variants::check_gradients(spec, in.q, in.k, in.v, dout, dq, dk, dv).worst() : 0.0;
    const char* isa = cpu::isa_name(cpu::backward_isa(cpu::kernel_isa()));

    std::printf("shape        %s, %d threads, %s backward (%s)\n", spec.shape_string().c_str(), threads, variant.c_str(), isa);
    std::printf("backward     median %.3f ms, best %.3f ms over %d runs\n", median, ms.front(), reps);
    std::printf("backward     %.1f GFLOP/s wall, %.1f GFLOP/s per CPU-second x threads\n", gflops, gflops_cpu);
    std::printf("sgemm        %.1f GFLOP/s median (%.1f before, %.1f after), best %.1f (%s)\n", sgemm_gflops,
                before.matmul_tflops * 1e3, after.matmul_tflops * 1e3, sgemm_best, before.matmul_what.c_str());
    std::printf("ratio        %.2fx sgemm by medians, %.2fx by bests (target >= 0.5x)\n", gflops / sgemm_gflops,
                best_gflops / sgemm_best);
    if (check) std::printf("rel_err      %.3e (worst of dQ, dK, dV against fp64)\n", err);
    std::printf(
        "{\"variant\": \"%s\", \"pass\": \"backward\", \"shape\": \"%s\", \"dtype\": \"%s\", \"threads\": %d, "
        "\"isa\": \"%s\", \"median_ms\": %.4f, \"best_ms\": %.4f, \"gflops\": %.1f, \"gflops_cpu\": %.1f, "
        "\"sgemm_gflops\": %.1f, \"ratio\": %.3f, \"best_ratio\": %.3f, \"grad_rel_err\": %.3e}\n",
        variant.c_str(), spec.shape_string().c_str(), std::string(dtype_name(spec.dtype)).c_str(), threads, isa, median,
        ms.front(), gflops, gflops_cpu, sgemm_gflops, gflops / sgemm_gflops, best_gflops / sgemm_best, err);
    return 0;
  });
}
