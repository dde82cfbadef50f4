// The profiler's cost per recorded range (target <= 0.5 µs; Kineto's stress test reports about
// 0.9 µs per op) and its cost when off (one relaxed atomic load per range).
//   ninja -C build/dev profiler_overhead_bench && build/dev/bench/profiler_overhead_bench
#include <attnprof/profiler.h>
#include <benchmark/benchmark.h>

namespace {

using attnprof::profiler::Options;
using attnprof::profiler::Profiler;
using attnprof::profiler::Range;
using attnprof::profiler::Schedule;
using attnprof::trace::Category;

// Recording buffers grow with every range: a fixed iteration count bounds the memory (~100 MB).
constexpr benchmark::IterationCount kRecorded = 1000000;

void BM_RangeOff(benchmark::State& state) {
  for (auto _ : state) {
    Range r(Category::cpu_op, "aten::bmm");
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_RangeOff);

void BM_RecordAllocationOff(benchmark::State& state) {
  int x = 0;
  for (auto _ : state) {
    attnprof::profiler::record_allocation(attnprof::Device::cpu, &x, 64, 64);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_RecordAllocationOff);

void record(benchmark::State& state, Options options, bool shapes) {
  options.schedule = Schedule{0, 0, 1, 1};
  Profiler prof(options);
  prof.start();
  attnprof::Tensor q = attnprof::Tensor::empty({8, 16, 1024, 64}, attnprof::DType::bf16);
  for (auto _ : state) {
    if (shapes) {
      Range r(Category::cpu_op, "aten::scaled_dot_product_attention", {&q, &q, &q});
    } else {
      Range r(Category::cpu_op, "aten::scaled_dot_product_attention");
    }
    benchmark::ClobberMemory();
  }
  // After the loop: not timed.
  prof.stop();
  auto trace = prof.take_trace();
  state.counters["events"] = static_cast<double>(trace.events.size());
}

void BM_RangeRecorded(benchmark::State& state) { record(state, Options{}, false); }
BENCHMARK(BM_RangeRecorded)->Iterations(kRecorded);

void BM_RangeRecordedWithShapes(benchmark::State& state) {
  Options o;
  o.record_shapes = true;
  record(state, o, true);
}
BENCHMARK(BM_RangeRecordedWithShapes)->Iterations(kRecorded);

// A forward's worth of nesting: attn_fwd { op { cpu_kernel } x 3 }: 7 ranges per iteration.
void BM_NestedForwardRecorded(benchmark::State& state) {
  Options o;
  o.schedule = Schedule{0, 0, 1, 1};
  Profiler prof(o);
  prof.start();
  for (auto _ : state) {
    Range fwd(Category::user_annotation, "attn_fwd");
    for (int i = 0; i < 3; ++i) {
      Range op(Category::cpu_op, "aten::bmm");
      Range k(Category::cpu_kernel, "gemm_bf16");
    }
  }
  prof.stop();
  state.counters["ranges_per_iter"] = 7;
}
BENCHMARK(BM_NestedForwardRecorded)->Iterations(kRecorded / 7);

// The cost of building the Trace at stop(): per recorded range.
void BM_StopAndTakeTrace(benchmark::State& state) {
  for (auto _ : state) {
    state.PauseTiming();
    Options o;
    o.schedule = Schedule{0, 0, 1, 1};
    Profiler prof(o);
    prof.start();
    for (int i = 0; i < 100000; ++i) Range r(Category::cpu_op, "aten::bmm");
    state.ResumeTiming();
    prof.stop();
    auto t = prof.take_trace();
    benchmark::DoNotOptimize(t.events.data());
  }
  state.SetItemsProcessed(state.iterations() * 100000);
}
BENCHMARK(BM_StopAndTakeTrace)->Iterations(5)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
