// How much profiling inflates a forward (target <= 2%): the flash variant at the blog's shape
// (8, 16, 1024, 64, bf16, causal) on the CPU, timed with the profiler off and recording
// (record_shapes and profile_memory on, as `attnprof run` records), in the same process.
//   build/<preset>/bench/profiler_inflation_bench --benchmark_repetitions=5
#include <attnprof/attention.h>
#include <attnprof/profiler.h>
#include <attnprof/variant.h>
#include <benchmark/benchmark.h>

namespace {

using namespace attnprof;

struct Problem {
  AttentionSpec spec;
  AttentionInputs in;
  Tensor out;
  Variant* flash = nullptr;
  Problem() : in(make_inputs(spec, 0)), out(make_output(spec)), flash(find_variant("flash")) {
    flash->prepare(spec);
  }
};

Problem& problem() {
  static Problem p;
  return p;
}

void forward(Problem& p) {
  profiler::Range range(trace::Category::user_annotation, "attn_fwd");
  p.flash->forward(p.spec, p.in.q, p.in.k, p.in.v, p.out);
}

void BM_FlashForwardProfilerOff(benchmark::State& state) {
  Problem& p = problem();
  for (auto _ : state) forward(p);
  state.counters["GFLOP/s"] = benchmark::Counter(p.spec.flops() / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_FlashForwardProfiled(benchmark::State& state) {
  Problem& p = problem();
  profiler::Options options;
  options.record_shapes = true;
  options.profile_memory = true;
  options.schedule = profiler::Schedule{0, 0, 1, 0};  // every step active
  profiler::Profiler prof(options);
  prof.start();
  for (auto _ : state) {
    forward(p);
    prof.step();
  }
  prof.stop();
  state.counters["events"] = static_cast<double>(prof.take_trace().events.size());
  state.counters["GFLOP/s"] = benchmark::Counter(p.spec.flops() / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

// Interleaved so machine noise hits both alike.
BENCHMARK(BM_FlashForwardProfilerOff)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_FlashForwardProfiled)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_FlashForwardProfilerOff)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_FlashForwardProfiled)->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
