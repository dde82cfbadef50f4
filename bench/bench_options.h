#pragma once
// The options the single-shape CPU bench executables share (cpu_attention_json.cpp,
// cpu_backward_bench.cpp): the shape, --threads and --cpu-isa, applied to the process.
#include <attnprof/attention.h>
#include <attnprof/kernel_overrides.h>
#include <attnprof/error.h>
#include <omp.h>

#include <cstdio>
#include <exception>

#include "bench_text.h"

namespace attnprof::bench {

// --batch, --heads, --kv-heads, --seq, --head-dim, --dtype, --causal (0/1); validated.
inline AttentionSpec spec_option(int argc, char** argv, std::int64_t default_heads, const char* default_dtype) {
  AttentionSpec spec;
  spec.batch = option(argc, argv, "--batch", 1);
  spec.heads = option(argc, argv, "--heads", default_heads);
  spec.kv_heads = option(argc, argv, "--kv-heads", spec.heads);
  spec.seq_q = spec.seq_k = option(argc, argv, "--seq", 1024);
  spec.head_dim = option(argc, argv, "--head-dim", 64);
  spec.dtype = parse_dtype(text_option(argc, argv, "--dtype", default_dtype));
  spec.causal = option(argc, argv, "--causal", 1) != 0;
  spec.validate();
  return spec;
}

// --threads (default: OpenMP's) set as OpenMP's count, and --cpu-isa as the kernel override (an
// unknown ISA: UsageError naming the allowed ones). Returns the thread count.
inline int apply_thread_and_isa_options(int argc, char** argv) {
  const int threads = static_cast<int>(option(argc, argv, "--threads", omp_get_max_threads()));
  omp_set_num_threads(threads);
  KernelOverrides overrides;
  overrides.cpu_isa = text_option(argc, argv, "--cpu-isa", "");
  set_kernel_overrides(overrides);
  return threads;
}

// Runs body() (returning the exit status); a UsageError prints "error: ..." and exits 2, any other
// exception exits 1.
template <class Body>
int guarded_main(Body&& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

}  // namespace attnprof::bench
