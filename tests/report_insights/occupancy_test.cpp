#include "report/occupancy.h"

#include <gtest/gtest.h>

#include "report_insights/synthetic_trace.h"

namespace attnprof::report {
namespace {

TEST(Occupancy, FlashForwardOnH200IsRegisterLimitedAt12Point5Percent) {
  auto occ = estimate_occupancy(testing::h200_kineto_properties(), testing::footprint(255, 128, 49152));
  ASSERT_TRUE(occ);
  // 255·32 = 8160 → 8192 registers per warp; 4 warps → 32,768 per block; 65,536 / 32,768 = 2.
  EXPECT_EQ(occ->blocks_by_registers, 2);
  // 49,152 + 1,024 reserved = 50,176; 233,472 / 50,176 = 4.
  EXPECT_EQ(occ->blocks_by_shared, 4);
  EXPECT_EQ(occ->blocks_by_threads, 16);
  EXPECT_EQ(occ->blocks_by_limit, 32);
  EXPECT_EQ(occ->blocks_per_sm, 2);
  EXPECT_EQ(occ->active_warps, 8);
  EXPECT_EQ(occ->max_warps, 64);
  EXPECT_DOUBLE_EQ(occ->percent, 12.5);
  EXPECT_EQ(occ->limiter, "registers");
  EXPECT_EQ(occ->arithmetic, "255 regs \u00d7 128 threads = 32,640 of 65,536 \u2192 2 blocks \u2192 8 of 64 warps = 12.5%");
}

TEST(Occupancy, NvjetGemmIsLimitedByRegistersAndSharedMemory) {
  auto occ = estimate_occupancy(testing::h200_kineto_properties(), testing::footprint(168, 384, 213188));
  ASSERT_TRUE(occ);
  EXPECT_EQ(occ->blocks_per_sm, 1);
  EXPECT_EQ(occ->active_warps, 12);
  EXPECT_DOUBLE_EQ(occ->percent, 18.75);
  EXPECT_EQ(occ->limiter, "registers and shared memory");
}

TEST(Occupancy, LightKernelReachesFullOccupancy) {
  auto occ = estimate_occupancy(testing::h200_kineto_properties(), testing::footprint(32, 128, 0));
  ASSERT_TRUE(occ);
  EXPECT_EQ(occ->blocks_by_shared, 32);
  EXPECT_EQ(occ->blocks_per_sm, 16);  // 2048 threads / 128, and 65,536 / (32·128) registers
  EXPECT_DOUBLE_EQ(occ->percent, 100.0);
  EXPECT_EQ(occ->limiter, "registers and threads");
}

TEST(Occupancy, RegisterRoundingShownWhenItChangesTheAnswer) {
  // 33 regs → 33·32 = 1056 → 1280 per warp; 8 warps → 10,240 per block → 6 blocks, not 65,536 / 8,448 = 7.
  auto occ = estimate_occupancy(testing::h200_kineto_properties(), testing::footprint(33, 256, 0));
  ASSERT_TRUE(occ);
  EXPECT_EQ(occ->blocks_by_registers, 6);
  EXPECT_EQ(occ->blocks_per_sm, 6);
  EXPECT_EQ(occ->arithmetic,
            "33 regs \u00d7 256 threads = 8,448 of 65,536 (10,240 as allocated per warp) \u2192 6 blocks \u2192 48 of 64 "
            "warps = 75%");
}

TEST(Occupancy, MissingLimitsComeFromTheComputeCapability) {
  trace::DeviceProperties ampere_consumer;  // only the compute capability is known
  ampere_consumer.compute_major = 8;
  ampere_consumer.compute_minor = 6;
  SmLimits limits = sm_limits(ampere_consumer);
  EXPECT_EQ(limits.max_threads_per_sm, 1536);
  EXPECT_EQ(limits.max_blocks_per_sm, 16);
  EXPECT_EQ(limits.regs_per_sm, 65536);
  auto occ = estimate_occupancy(ampere_consumer, testing::footprint(64, 256, 0));
  ASSERT_TRUE(occ);
  // registers: 64·256 = 16,384 → 4 blocks; threads: 1536 / 256 = 6 → 4 blocks → 32 of 48 warps.
  EXPECT_EQ(occ->blocks_per_sm, 4);
  EXPECT_EQ(occ->max_warps, 48);
  EXPECT_EQ(format_percent(occ->percent), "66.67");
}

TEST(Occupancy, UnknownFootprintGivesNoEstimate) {
  trace::KernelLaunch unknown;
  unknown.block = {128, 1, 1};
  EXPECT_FALSE(estimate_occupancy(testing::h200_kineto_properties(), unknown));
  EXPECT_FALSE(estimate_occupancy(testing::h200_kineto_properties(), testing::footprint(64, 0, 0)));
}

TEST(Occupancy, BlockTooLargeForTheRegisterFileCannotLaunch) {
  auto occ = estimate_occupancy(testing::h200_kineto_properties(), testing::footprint(255, 1024, 0));
  ASSERT_TRUE(occ);
  EXPECT_EQ(occ->blocks_per_sm, 0);
  EXPECT_DOUBLE_EQ(occ->percent, 0.0);
}

TEST(Format, DigitsAndPercents) {
  EXPECT_EQ(group_digits(32640), "32,640");
  EXPECT_EQ(group_digits(65536), "65,536");
  EXPECT_EQ(group_digits(999), "999");
  EXPECT_EQ(group_digits(-1234567), "-1,234,567");
  EXPECT_EQ(format_percent(12.5), "12.5");
  EXPECT_EQ(format_percent(25.0), "25");
  EXPECT_EQ(format_percent(18.75), "18.75");
}

}  // namespace
}  // namespace attnprof::report
