// run_variant's scope (what a run sets for itself does not outlive it) and the kept-forward count.
#include <attnprof/kernel_overrides.h>
#include <attnprof/run.h>
#include <gtest/gtest.h>

#include <vector>

#include "cpu/cpu_features.h"

using namespace attnprof;

// A run with --cpu-isa portable runs the portable kernels, and afterwards the overrides are the
// automatic ones again (the ceilings measured after `attnprof run` must not inherit them), as
// they were before the run.
TEST(RunVariant, KernelOverridesHoldForTheRunOnly) {
  const cpu::Isa best = cpu::kernel_isa();
  RunOptions options;
  options.variant = "flash";
  options.spec.batch = 1;
  options.spec.heads = 2;
  options.spec.kv_heads = 2;
  options.spec.seq_q = options.spec.seq_k = 64;
  options.spec.head_dim = 32;
  options.spec.dtype = DType::fp32;
  options.spec.device = Device::cpu;
  options.out_dir.clear();
  options.kernels.cpu_isa = "portable";
  const RunResult result = run_variant(options);
  EXPECT_NE(result.summary, "");
  const KernelOverrides after = kernel_overrides();
  EXPECT_EQ(after.cpu_isa, "");
  EXPECT_EQ(after.flash_schedule, "");
  EXPECT_EQ(after.cudnn_engine, -1);
  EXPECT_EQ(cpu::kernel_isa(), best);
}

namespace attnprof {
namespace {

// kept_forwards sizes the kept forwards from one forward's time: the count, raised to fill the
// minimum time (ceil(min / one)), capped at kMaxKeptForwards, never below the count.
TEST(KeptForwards, FillTheMinimumTimeWithinTheCap) {
  EXPECT_EQ(kept_forwards(10, 0.2, 50e6), 10);      // 10 × 50 ms already fill 0.2 s
  EXPECT_EQ(kept_forwards(10, 0.2, 1e6), 200);      // 1 ms: 200 forwards make 0.2 s
  EXPECT_EQ(kept_forwards(10, 0.2, 3e6), 67);       // ceil(0.2 / 0.003) = ceil(66.67)
  EXPECT_EQ(kept_forwards(10, 0.2, 1e3), 1000);     // 1 µs would need 200000: capped
  EXPECT_EQ(kept_forwards(10, 0, 1e3), 10);         // 0: exactly the count
  EXPECT_EQ(kept_forwards(1200, 0.2, 1e3), 1200);   // a count above the cap is kept as asked
  EXPECT_EQ(kept_forwards(10, 0.2, 0), 1000);       // a forward too fast for the clock: the cap
}

// sizing_pass_ns: the median of the timed passes, so one slow pass (a preemption) does not size
// the kept passes; at least 3 passes unless the first alone is as long as the minimum time.
TEST(SizingPass, MedianOfAtLeastThreePasses) {
  const auto timer = [](std::vector<double> times, int& calls) {
    return [times = std::move(times), &calls]() { return times.at(static_cast<std::size_t>(calls++)); };
  };
  int calls = 0;
  // 0.05 s, 10 kept: a first pass of 5 ms times 10 would fill it, yet the median of 3 is 6 µs;
  // the three add up to 5.011 ms, over 0.05 s / 20 = 2.5 ms: no fourth.
  EXPECT_DOUBLE_EQ(sizing_pass_ns(10, 0.05, timer({5e6, 5e3, 6e3, 5e3}, calls)), 6e3);
  EXPECT_EQ(calls, 3);
  calls = 0;
  EXPECT_DOUBLE_EQ(sizing_pass_ns(10, 0.05, timer({60e6}, calls)), 60e6);  // one pass over 0.05 s
  EXPECT_EQ(calls, 1);
  calls = 0;
  // 10 ms each, 10 kept: the median of 3 times 10 is 0.1 s, over 0.05 s.
  EXPECT_DOUBLE_EQ(sizing_pass_ns(10, 0.05, timer({10e6, 11e6, 9e6}, calls)), 10e6);
  EXPECT_EQ(calls, 3);
  calls = 0;
  // 1 µs each: 100 passes make 0.1 ms, under 2.5 ms; 100 is the most timed.
  EXPECT_DOUBLE_EQ(sizing_pass_ns(10, 0.05, timer(std::vector<double>(120, 1e3), calls)), 1e3);
  EXPECT_EQ(calls, 100);
}

}  // namespace
}  // namespace attnprof
