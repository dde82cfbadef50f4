// The Hopper layouts on the host (no GPU): the 128-byte swizzle, the wgmma shared-memory descriptor
// and the accumulator fragment, each against values worked out by hand from
// research/hopper-flash.md §3.1-3.2, plus the tensor-map builder's argument checks.
#include <attnprof/error.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>

#include "cuda/hopper/swizzle.h"
#include "cuda/hopper/tma.h"
#include "cuda/hopper/wgmma_layout.h"

using namespace attnprof;
using namespace attnprof::cuda::hopper;

// byte = r·128 + ((c ^ (r & 7)) << 4)
TEST(HopperSwizzle, ChunkOffsetsWorkedByHand) {
  EXPECT_EQ(swizzle128_chunk_offset(0, 0), 0u);
  EXPECT_EQ(swizzle128_chunk_offset(0, 5), 80u);            // row 0 is not permuted
  EXPECT_EQ(swizzle128_chunk_offset(1, 0), 128u + 16u);     // 0 ^ 1 = 1
  EXPECT_EQ(swizzle128_chunk_offset(3, 2), 384u + 16u);     // 2 ^ 3 = 1
  EXPECT_EQ(swizzle128_chunk_offset(5, 7), 640u + 32u);     // 7 ^ 5 = 2
  EXPECT_EQ(swizzle128_chunk_offset(7, 7), 896u);           // 7 ^ 7 = 0
  EXPECT_EQ(swizzle128_chunk_offset(8, 1), 1024u + 16u);    // row 8 starts the next atom: phase 0 again
  EXPECT_EQ(swizzle128_chunk_offset(13, 6), 1664u + 48u);   // 6 ^ (13 & 7 = 5) = 3
  EXPECT_EQ(swizzle128_chunk_offset(63, 0), 8064u + 112u);  // 0 ^ 7 = 7
}

TEST(HopperSwizzle, ElementOffsetsKeepTheChunkTogether) {
  EXPECT_EQ(swizzle128_bf16_offset(0, 0), 0u);
  EXPECT_EQ(swizzle128_bf16_offset(2, 9), 256u + 48u + 2u);   // chunk 1 ^ 2 = 3, element 1 of it
  EXPECT_EQ(swizzle128_bf16_offset(6, 63), 768u + 16u + 14u); // chunk 7 ^ 6 = 1, element 7
}

TEST(HopperSwizzle, EachRowIsAPermutationOfItsOwn128Bytes) {
  for (std::uint32_t row = 0; row < 64; ++row) {
    std::set<std::uint32_t> offsets;
    for (std::uint32_t col = 0; col < 64; ++col) {
      std::uint32_t offset = swizzle128_bf16_offset(row, col);
      EXPECT_GE(offset, row * 128u);
      EXPECT_LT(offset, row * 128u + 128u);
      offsets.insert(offset);
    }
    EXPECT_EQ(offsets.size(), 64u) << "row " << row;
  }
}

// start >> 4 in bits 0-13, LBO field 1 in bits 16-29, SBO 1024 >> 4 = 64 in bits 32-45, layout 1 in 62-63.
TEST(HopperWgmmaDescriptor, FieldsWorkedByHand) {
  EXPECT_EQ(sw128_kmajor_descriptor(0x0000), 0x4000004000010000ull);
  EXPECT_EQ(sw128_kmajor_descriptor(0x0400), 0x4000004000010040ull);
  EXPECT_EQ(sw128_kmajor_descriptor(0x0420), 0x4000004000010042ull);  // k16 step 1: +32 B = +2 in the field
  // The field holds bits 4-17 of the address: the 256 KiB shared window, nothing above.
  EXPECT_EQ(sw128_kmajor_descriptor(0x3FFF0), 0x4000004000013FFFull);
  EXPECT_EQ(sw128_kmajor_descriptor(0x40000), 0x4000004000010000ull);
}

TEST(HopperWgmmaAccumulator, PositionsWorkedByHand) {
  // thread 0: rows 0 and 8, columns 0,1 of each 8-column block.
  EXPECT_EQ(std::make_pair(accumulator_row(0, 0), accumulator_col(0, 0)), std::make_pair(0, 0));
  EXPECT_EQ(std::make_pair(accumulator_row(0, 1), accumulator_col(0, 1)), std::make_pair(0, 1));
  EXPECT_EQ(std::make_pair(accumulator_row(0, 2), accumulator_col(0, 2)), std::make_pair(8, 0));
  EXPECT_EQ(std::make_pair(accumulator_row(0, 4), accumulator_col(0, 4)), std::make_pair(0, 8));
  // thread 5 (warp 0, lane 5): row 1 (+8), columns 2,3; register 6 = block 1, second row half.
  EXPECT_EQ(std::make_pair(accumulator_row(5, 6), accumulator_col(5, 6)), std::make_pair(9, 10));
  // thread 37 (warp 1, lane 5): 16 rows further down.
  EXPECT_EQ(std::make_pair(accumulator_row(37, 6), accumulator_col(37, 6)), std::make_pair(25, 10));
  // thread 127, register 31: the last element.
  EXPECT_EQ(std::make_pair(accumulator_row(127, 31), accumulator_col(127, 31)), std::make_pair(63, 63));
}

TEST(HopperWgmmaAccumulator, TheWarpgroupCoversTheTileOnce) {
  std::set<std::pair<int, int>> seen;
  for (int t = 0; t < 128; ++t)
    for (int v = 0; v < 32; ++v) {
      int row = accumulator_row(t, v), col = accumulator_col(t, v);
      ASSERT_TRUE(row >= 0 && row < 64 && col >= 0 && col < 64) << t << " " << v;
      seen.insert({row, col});
    }
  EXPECT_EQ(seen.size(), 64u * 64u);
}

// Argument checks run before the driver is asked for anything, so they need no GPU.
TEST(HopperTensorMap, RejectsAMisalignedAddressAndABadStride) {
  try {
    make_bf16_tile_map(reinterpret_cast<const void*>(std::uintptr_t{0x1008}), 128, 128, 128);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("0x1008 is not 16-byte aligned"), std::string::npos) << e.what();
  }
  try {
    make_bf16_tile_map(reinterpret_cast<const void*>(std::uintptr_t{0x1000}), 128, 100, 100);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("row_stride 100"), std::string::npos) << e.what();
  }
}
