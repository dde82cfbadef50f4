// CPU variants at the blog's shape and the issue-9 shapes, with the machine's own yardsticks
// measured in the same run: an OpenBLAS sgemm (fp32), a oneDNN bf16 matmul (when oneDNN is
// installed) and the register-only FMA / vdpbf16ps ceilings of every core.
//
//   ninja -C build/rel bench_cpu_variants
//   build/rel/bench/bench_cpu_variants --benchmark_filter='flash|sgemm|dnnl|peak' --benchmark_min_time=2
//
// GFLOP/s counts useful FLOPs, 4·B·H·Sq·Sk·D halved for causal (AttentionSpec::flops()); a
// GEMM counts 2·M·N·K. Two counters:
//   GFLOPs      wall clock (UseRealTime): the kernels run on every core;
//   GFLOPs_cpu  FLOPs per second of process CPU time, times the thread count: what the same run
//               gives on cores nobody else uses. On the shared development VM other jobs time-slice
//               our threads, which stretches wall time but not CPU time (spin-waiting still counts,
//               so this errs low). Compare kernels and yardsticks by the same counter.
#include <attnprof/attention.h>
#include <attnprof/variant.h>
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <omp.h>

#include <immintrin.h>

#if ATTNPROF_BENCH_HAVE_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#endif

#include <algorithm>
#include <ctime>
#include <string>
#include <vector>

namespace attnprof {
namespace {

double process_cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Sets GFLOPs (wall-clock rate) and GFLOPs_cpu (see the file comment) for flops_per_iteration.
void set_rates(benchmark::State& state, double flops_per_iteration, double cpu_seconds) {
  state.counters["GFLOPs"] = benchmark::Counter(flops_per_iteration / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  const double total = flops_per_iteration * static_cast<double>(state.iterations());
  state.counters["GFLOPs_cpu"] = total / cpu_seconds * omp_get_max_threads() / 1e9;
}

struct Shape {
  std::int64_t batch, heads, seq, head_dim;
  DType dtype;
  bool causal;
};

std::string shape_label(const Shape& s) {
  return std::to_string(s.batch) + "x" + std::to_string(s.heads) + "x" + std::to_string(s.seq) + "x" +
         std::to_string(s.head_dim) + "/" + std::string(dtype_name(s.dtype)) + (s.causal ? "/causal" : "/full");
}

void bench_variant(benchmark::State& state, std::string name, Shape shape) {
  AttentionSpec spec;
  spec.batch = shape.batch;
  spec.heads = spec.kv_heads = shape.heads;
  spec.seq_q = spec.seq_k = shape.seq;
  spec.head_dim = shape.head_dim;
  spec.dtype = shape.dtype;
  spec.causal = shape.causal;
  Variant* variant = find_variant(name);
  if (variant == nullptr || variant->refusal(spec)) {
    state.SkipWithError("variant refuses this shape");
    return;
  }
  const AttentionInputs in = make_inputs(spec, 1);
  Tensor out = make_output(spec);
  variant->prepare(spec);
  variant->forward(spec, in.q, in.k, in.v, out);  // warm-up: first touch of every buffer
  const double cpu0 = process_cpu_seconds();
  for (auto _ : state) {
    variant->forward(spec, in.q, in.k, in.v, out);
    benchmark::ClobberMemory();
  }
  set_rates(state, spec.flops(), process_cpu_seconds() - cpu0);
}

// Every core runs its own n×n×n sgemm (OpenBLAS single-threaded per call, as the CPU backend uses it).
void bench_sgemm(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const int threads = omp_get_max_threads();
  if (openblas_get_parallel() == 1) openblas_set_num_threads(1);
  std::vector<std::vector<float>> a(threads), b(threads), c(threads);
  for (int t = 0; t < threads; ++t) {
    a[t].assign(static_cast<std::size_t>(n) * n, 0.5f);
    b[t].assign(static_cast<std::size_t>(n) * n, 0.25f);
    c[t].assign(static_cast<std::size_t>(n) * n, 0.0f);
  }
  const double cpu0 = process_cpu_seconds();
  for (auto _ : state) {
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a[t].data(), n, b[t].data(), n, 0.0f,
                  c[t].data(), n);
    }
  }
  set_rates(state, 2.0 * n * n * n * threads, process_cpu_seconds() - cpu0);
}

// The FMA ceilings of this CPU, every core busy: 12 independent accumulators per core, no memory.
__attribute__((target("avx512f"))) float fma_fp32_loop(long iterations) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(0.001f * static_cast<float>(i));
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-4f);
  for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  __m512 sum = acc[0];
  for (int i = 1; i < 12; ++i) sum = _mm512_add_ps(sum, acc[i]);
  return _mm512_reduce_add_ps(sum);
}

__attribute__((target("avx512f,avx512bf16"))) float dpbf16_loop(long iterations) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(0.001f * static_cast<float>(i));
  const __m512i a = _mm512_set1_epi32(0x3f803f80), b = _mm512_set1_epi32(0x3a003a00);
  for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], (__m512bh)a, (__m512bh)b);
  }
  __m512 sum = acc[0];
  for (int i = 1; i < 12; ++i) sum = _mm512_add_ps(sum, acc[i]);
  return _mm512_reduce_add_ps(sum);
}

void bench_peak(benchmark::State& state, bool bf16) {
  if (!__builtin_cpu_supports("avx512f") || (bf16 && !__builtin_cpu_supports("avx512bf16"))) {
    state.SkipWithError("CPU lacks the instruction");
    return;
  }
  const long iterations = 1 << 20;
  const int threads = omp_get_max_threads();
  float sink = 0;
  const double cpu0 = process_cpu_seconds();
  for (auto _ : state) {
#pragma omp parallel num_threads(threads) reduction(+ : sink)
    sink += bf16 ? dpbf16_loop(iterations) : fma_fp32_loop(iterations);
  }
  benchmark::DoNotOptimize(sink);
  // 12 vector ops per iteration: an fp32 FMA is 32 FLOP on 16 lanes, a vdpbf16ps 64 (two products per lane)
  set_rates(state, 12.0 * iterations * (bf16 ? 64 : 32) * threads, process_cpu_seconds() - cpu0);
}

#if ATTNPROF_BENCH_HAVE_DNNL
// oneDNN 2.6 bf16 × bf16 → fp32 matmul of n×n×n, on oneDNN's own threads (all cores).
void bench_dnnl_bf16(benchmark::State& state) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const dnnl::memory::dim n = state.range(0);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const dnnl::memory::desc a_md({n, n}, dt::bf16, tag::ab), b_md({n, n}, dt::bf16, tag::ab),
      c_md({n, n}, dt::f32, tag::ab);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), engine);
  const dnnl::matmul matmul(pd);
  dnnl::memory a(a_md, engine), b(b_md, engine), c(c_md, engine);
  std::fill_n(static_cast<std::uint16_t*>(a.get_data_handle()), n * n, std::uint16_t{0x3f00});
  std::fill_n(static_cast<std::uint16_t*>(b.get_data_handle()), n * n, std::uint16_t{0x3e80});
  const double cpu0 = process_cpu_seconds();
  for (auto _ : state) {
    matmul.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    stream.wait();
  }
  set_rates(state, 2.0 * n * n * n, process_cpu_seconds() - cpu0);
  state.SetLabel(pd.impl_info_str());
}
#endif

void register_all() {
  benchmark::RegisterBenchmark("sgemm_openblas/1024", bench_sgemm)->Arg(1024)->UseRealTime()->Unit(benchmark::kMillisecond);
#if ATTNPROF_BENCH_HAVE_DNNL
  benchmark::RegisterBenchmark("dnnl_bf16_matmul/2048", bench_dnnl_bf16)->Arg(2048)->UseRealTime()->Unit(benchmark::kMillisecond);
#endif
  benchmark::RegisterBenchmark("peak_fma_fp32", bench_peak, false)->UseRealTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("peak_dpbf16", bench_peak, true)->UseRealTime()->Unit(benchmark::kMillisecond);
  const std::vector<std::string> cpu_variants{"naive", "inplace", "math", "fused", "efficient", "flash"};
  // The blog's shape and (1, 16, 4096, 64), bf16 causal: every CPU variant (issue 2, acceptance 7).
  for (const Shape& shape : {Shape{8, 16, 1024, 64, DType::bf16, true}, Shape{1, 16, 4096, 64, DType::bf16, true}}) {
    for (const auto& name : cpu_variants) {
      benchmark::RegisterBenchmark(("variant/" + name + "/" + shape_label(shape)).c_str(), bench_variant, name, shape)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
  // Issue 9: the fused kernels at (1, 16, 4096, 64) and (1, 16, 2048, 128), fp32 and bf16, causal and not.
  for (std::int64_t seq_dim : {4096, 2048}) {
    for (DType dtype : {DType::fp32, DType::bf16}) {
      for (bool causal : {true, false}) {
        const Shape shape{1, 16, seq_dim, seq_dim == 4096 ? 64 : 128, dtype, causal};
        for (const char* name : {"flash", "efficient"}) {
          if (dtype == DType::bf16 && causal && seq_dim == 4096) continue;  // registered above
          benchmark::RegisterBenchmark((std::string("fused/") + name + "/" + shape_label(shape)).c_str(),
                                       bench_variant, std::string(name), shape)
              ->UseRealTime()
              ->Unit(benchmark::kMillisecond);
        }
      }
    }
  }
}

}  // namespace
}  // namespace attnprof

int main(int argc, char** argv) {
  attnprof::register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
