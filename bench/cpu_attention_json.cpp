// One CPU variant at one shape, timed without the profiler, printed as one JSON object with the
// keys `attnprof run --format json` uses (variant, device, dtype, median_ms, rel_err, ...), so
// bench/cpu_vs_pytorch.py can compare against PyTorch with either binary (this one needs no CLI).
//
//   bench_cpu_attention_json --variant flash --batch 1 --heads 16 --seq 4096 --head-dim 64 \
//       --dtype bf16 --causal 1 --threads 2 --reps 5 [--cpu-isa avx512_bf16]
#include <attnprof/attention.h>
#include <attnprof/error.h>
#include <attnprof/kernel_overrides.h>
#include <attnprof/profiler.h>
#include <attnprof/variant.h>
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench_options.h"
#include "cpu/cpu_features.h"
#include "cpu/fused_attention.h"
#include "variants/reference.h"

using attnprof::bench::option;
using attnprof::bench::text_option;

int main(int argc, char** argv) {
  using namespace attnprof;
  return bench::guarded_main([&] {
    const AttentionSpec spec = bench::spec_option(argc, argv, 16, "bf16");
    const int threads = bench::apply_thread_and_isa_options(argc, argv);
    const int reps = static_cast<int>(option(argc, argv, "--reps", 5));
    const std::string name = text_option(argc, argv, "--variant", "flash");
    Variant* variant = find_variant(name);
    if (variant == nullptr) throw UsageError("--variant: unknown '" + name + "'; allowed: " + variant_names());
    if (auto why = variant->refusal(spec)) throw UsageError(*why);

    const AttentionInputs in = make_inputs(spec, 0);
    Tensor out = make_output(spec);
    variants::poison_nan(out);
    variant->prepare(spec);
    variant->forward(spec, in.q, in.k, in.v, out);  // warm-up
    variant->forward(spec, in.q, in.k, in.v, out);
    std::vector<double> ms;
    for (int i = 0; i < reps; ++i) {
      const std::int64_t t0 = profiler::now_ns();
      variant->forward(spec, in.q, in.k, in.v, out);
      ms.push_back((profiler::now_ns() - t0) / 1e6);
    }
    std::sort(ms.begin(), ms.end());
    const double median = ms[ms.size() / 2];
    const variants::ErrorReport err = variants::check_against_reference(spec, in.q, in.k, in.v, out, 256);
    std::printf(
        "{\"variant\": \"%s\", \"device\": \"cpu\", \"dtype\": \"%s\", \"threads\": %d, \"isa\": \"%s\", "
        "\"median_ms\": %.4f, \"best_ms\": %.4f, \"gflops\": %.1f, \"rel_err\": %.3e, \"err_scope\": \"%s\"}\n",
        name.c_str(), std::string(dtype_name(spec.dtype)).c_str(), threads,
        cpu::isa_name(cpu::fused_isa(spec.dtype, cpu::kernel_isa())), median,
        ms.front(), spec.flops() / median / 1e6, err.rel_err, err.scope().c_str());
    return 0;
  });
}
