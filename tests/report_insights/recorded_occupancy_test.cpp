// What a recorded 0% means and the grid's cap on an occupancy, worked by hand for the H200
// (132 SMs, 2,048 threads and 233,472 B of shared memory per SM, 49,152 B per block by default).
#include "report/recorded_occupancy.h"

#include <gtest/gtest.h>

#include "report_insights/synthetic_trace.h"

namespace attnprof::report {
namespace {

// The decode trace's cuDNN kernel (tests/data/model-traces/gpt_decode_kvcache_gqa): grid [1, 2, 4],
// 128 threads, 142 registers, 24,576 B shared; the trace records 0%.
trace::KernelLaunch decode_cudnn() {
  trace::KernelLaunch l = testing::footprint(142, 128, 24576, 0);
  l.grid = {1, 2, 4};
  return l;
}

TEST(RecordedOccupancy, ZeroFromAGridTooSmallForKinetosFigure) {
  const trace::KernelLaunch launch = decode_cudnn();
  auto occ = estimate_occupancy(testing::h200_kineto_properties(), launch);
  ASSERT_TRUE(occ);
  // 142·32 = 4,544 → 4,608 a warp, 4 warps = 18,432: 3 blocks; 24,576 + 1,024 B: 9 blocks → 3 blocks, 12 of 64 warps.
  EXPECT_DOUBLE_EQ(occ->percent, 18.75);
  const RecordedZero zero = recorded_zero(testing::h200_kineto_properties(), launch, *occ);
  EXPECT_EQ(zero.cause, ZeroCause::grid_rounds_down);
  // Kineto: min(3, 8 / 132) × 128 / 2,048 = 0.003788 → (int)(0.5 + 0.3788) = 0.
  EXPECT_NEAR(zero.kineto_percent, 100.0 * 8 / 132 * 128 / 2048, 1e-9);
  EXPECT_EQ(zero.text, "8 CTAs / 132 SMs \u00d7 128 threads / 2,048 = 0.38%");
}

TEST(RecordedOccupancy, ZeroFromABlockOverTheDefault48KiB) {
  // The decode trace's nvjet GEMM: 164,308 B of shared memory, grid [4, 8, 1].
  trace::KernelLaunch launch = testing::footprint(168, 384, 164308, 0);
  launch.grid = {4, 8, 1};
  auto occ = estimate_occupancy(testing::h200_kineto_properties(), launch);
  ASSERT_TRUE(occ);
  const RecordedZero zero = recorded_zero(testing::h200_kineto_properties(), launch, *occ);
  EXPECT_EQ(zero.cause, ZeroCause::shared_over_default);
  EXPECT_EQ(zero.text, "no block of 164,308 B fits the 49,152 B Kineto's calculator assumes without opt-in");
}

TEST(RecordedOccupancy, NoCauseWhenTheTraceRecordsAFigureOrTheFootprintExplainsNothing) {
  trace::KernelLaunch flash = testing::footprint(255, 128, 49152, 13);  // 49,152 B is not over 49,152
  auto occ = estimate_occupancy(testing::h200_kineto_properties(), flash);
  ASSERT_TRUE(occ);
  EXPECT_EQ(recorded_zero(testing::h200_kineto_properties(), flash, *occ).cause, ZeroCause::none);
  flash.recorded_occupancy_pct = 0;  // a 1,024-CTA grid: Kineto's figure would be 12.5%
  EXPECT_EQ(recorded_zero(testing::h200_kineto_properties(), flash, *occ).cause, ZeroCause::none);
}

TEST(RecordedOccupancy, GridUnderOneWaveCapsTheEstimate) {
  auto occ = estimate_occupancy(testing::h200_kineto_properties(), decode_cudnn());
  ASSERT_TRUE(occ);
  // 132 SMs × 3 blocks = 396 slots; 8 CTAs fill 8/396 of 18.75% = 0.3788%.
  auto cap = grid_cap(testing::h200_kineto_properties(), 8, *occ);
  ASSERT_TRUE(cap);
  EXPECT_EQ(cap->slots, 396);
  EXPECT_NEAR(cap->percent, 18.75 * 8 / 396, 1e-12);
  EXPECT_EQ(cap->text,
            "its grid of 8 CTAs is under one wave (132 SMs \u00d7 3 blocks = 396 slots): 8/396 of 18.75% = 0.38% of "
            "the GPU's warps at most");
  EXPECT_FALSE(grid_cap(testing::h200_kineto_properties(), 396, *occ));   // one full wave
  EXPECT_FALSE(grid_cap(testing::h200_kineto_properties(), 1024, *occ));  // more
}

}  // namespace
}  // namespace attnprof::report
