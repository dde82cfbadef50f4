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

#include "cpu/cpu_features.h"
#include "cpu/fused_attention.h"
#include "variants/reference.h"

namespace {

long option(int argc, char** argv, const char* name, long fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::stol(argv[i + 1]);
  }
  return fallback;
}
std::string text_option(int argc, char** argv, const char* name, const char* fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace attnprof;
  try {
    AttentionSpec spec;
    spec.batch = option(argc, argv, "--batch", 1);
    spec.heads = option(argc, argv, "--heads", 16);
    spec.kv_heads = option(argc, argv, "--kv-heads", spec.heads);
    spec.seq_q = spec.seq_k = option(argc, argv, "--seq", 1024);
    spec.head_dim = option(argc, argv, "--head-dim", 64);
    spec.dtype = parse_dtype(text_option(argc, argv, "--dtype", "bf16"));
    spec.causal = option(argc, argv, "--causal", 1) != 0;
    spec.validate();
    const int threads = static_cast<int>(option(argc, argv, "--threads", omp_get_max_threads()));
    const int reps = static_cast<int>(option(argc, argv, "--reps", 5));
    omp_set_num_threads(threads);
    const std::string name = text_option(argc, argv, "--variant", "flash");
    KernelOverrides overrides;
    overrides.cpu_isa = text_option(argc, argv, "--cpu-isa", "");
    set_kernel_overrides(overrides);  // an unknown ISA: UsageError naming the allowed ones
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
  } catch (const UsageError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
