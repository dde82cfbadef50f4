#include <attnprof/error.h>
#include <gtest/gtest.h>

#include "cuda/fake_records.h"
#include "cuda/occupancy.h"

using namespace attnprof;
using namespace attnprof::cuda;

// Worked by hand: 64 regs × 32 lanes = 2048 per warp (a multiple of 256); 8 warps → 16384 per
// block; 65536 / 16384 = 4 blocks; 4 × 8 = 32 of 64 warps = 50%, limited by registers.
TEST(Occupancy, RegistersLimit) {
  Footprint f{256, 64, 0, 132 * 8};
  OccupancyEstimate e = estimate_occupancy(f, fakes::h200());
  EXPECT_EQ(e.blocks_per_sm, 4);
  EXPECT_EQ(e.warps_per_sm, 32);
  EXPECT_DOUBLE_EQ(e.occupancy_pct, 50.0);
  EXPECT_EQ(e.limiter, "registers");
  EXPECT_NE(e.explanation.find("64 regs × 256 threads"), std::string::npos) << e.explanation;
}

// The flash kernel (D=128): 256 threads, 170 regs → 170·32 = 5440, rounded to 5632 per warp; 8 warps
// → 45056; 65536 / 45056 = 1 block; 96 KiB + 1 KiB reserved of 228 KiB would allow 2.
TEST(Occupancy, FlashKernelOneBlockByRegisters) {
  Footprint f{256, 170, 98304, 132 * 4};
  OccupancyEstimate e = estimate_occupancy(f, fakes::h200());
  EXPECT_EQ(e.blocks_per_sm, 1);
  EXPECT_DOUBLE_EQ(e.occupancy_pct, 12.5);
  EXPECT_EQ(e.limiter, "registers");
}

// cuDNN's SDPA kernel as recorded: 384 threads, 232448 B dynamic shared memory → 1 block by shared memory
// (232448 + 1024 = 233472 fits exactly once); 12 warps of 64 = 18.75%.
TEST(Occupancy, SharedMemoryLimit) {
  Footprint f{384, 80, 232448, 132};
  OccupancyEstimate e = estimate_occupancy(f, fakes::h200());
  EXPECT_EQ(e.blocks_per_sm, 1);
  EXPECT_EQ(e.limiter, "shared memory");
  EXPECT_DOUBLE_EQ(e.occupancy_pct, 18.75);
}

// 32 regs × 1024 threads: registers allow 2, warps allow 2 (64 / 32): warps named first.
TEST(Occupancy, WarpsLimit) {
  Footprint f{1024, 16, 0, 132 * 10};
  OccupancyEstimate e = estimate_occupancy(f, fakes::h200());
  EXPECT_EQ(e.blocks_per_sm, 2);
  EXPECT_EQ(e.limiter, "warps");
  EXPECT_DOUBLE_EQ(e.occupancy_pct, 100.0);
}

// 66 blocks on 132 SMs: half the SMs idle, so the estimate is scaled to the grid.
TEST(Occupancy, SmallGridLimits) {
  Footprint f{128, 32, 0, 66};
  OccupancyEstimate e = estimate_occupancy(f, fakes::h200());
  EXPECT_EQ(e.limiter, "grid");
  EXPECT_NEAR(e.occupancy_pct, 100.0 * 0.5 * 4 / 64, 1e-9);
}

TEST(Occupancy, BlockThatCannotFitIsAnError) {
  Footprint f{1024, 255, 0, 1};
  EXPECT_THROW(estimate_occupancy(f, fakes::h200()), Error);
}
