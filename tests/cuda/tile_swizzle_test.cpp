// The mma.sync kernels' tile swizzle and the ldmatrix lane offsets (src/cuda/tile_swizzle.h) on the
// host, at every head dim a kernel is specialised for (32, 64, 96, 128, 192, 256): offsets worked
// out by hand; every row a permutation of its chunks; every ldmatrix phase (8 rows, one logical
// chunk) on 8 different 16-byte bank groups; whole 8-row steps and whole swizzle groups of chunks
// (copy_tile's) keeping the swizzle; and the address the kernels form from a lane offset — tile +
// row_bytes + (chunk ^ flip) + whole rows, for every k-step, column slice and row step — equal to
// the swizzled offset of the element the mma fragment layout (PTX ISA, m16n8k16) asks that lane for.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>

#include "cuda/tile_swizzle.h"

using namespace attnprof::cuda::attention;

namespace {

template <int kHeadDim>
constexpr bool kSwizzle8 = swizzle8_for(kHeadDim);

template <int kHeadDim>
std::uint32_t offset(int row, int chunk) {
  return swizzled_offset(row, chunk, kHeadDim, kSwizzle8<kHeadDim>);
}

// The address ldmatrix_x4 (attention_kernel.cuh, inline PTX) forms in the backward kernels, tile
// base 0.
std::uint32_t address(LaneOffset lane, std::uint32_t flip, std::uint32_t add) {
  return lane.row_bytes + (lane.chunk ^ flip) + add;
}

// For 8×8 matrix m of an ldmatrix.x4, the (first row, chunk) it covers, from the m16n8k16
// fragments: A (16×16, row-major): a0 rows 0-7 k 0-7, a1 rows 8-15 k 0-7, a2 rows 0-7 k 8-15, a3
// rows 8-15 k 8-15. B from an [n][k] tile: b0, b1 of n 0-7 (k 0-7, 8-15), then of n 8-15. B from a
// [k][n] tile through .trans: b0, b1 of n 0-7 (k rows 0-7, 8-15), then of n 8-15.
struct MatrixOrigin {
  int row, chunk;
};
constexpr MatrixOrigin kAOrigins[4] = {{0, 0}, {8, 0}, {0, 1}, {8, 1}};
constexpr MatrixOrigin kBOrigins[4] = {{0, 0}, {0, 1}, {8, 0}, {8, 1}};
constexpr MatrixOrigin kBtOrigins[4] = {{0, 0}, {8, 0}, {0, 1}, {8, 1}};

template <int kHeadDim>
void expect_lane_offsets_address_fragments() {
  constexpr int kChunks = kHeadDim / 8, kRowBytes = kHeadDim * 2;
  int checked = 0;
  for (int lane = 0; lane < 32; ++lane) {
    const int m = lane / 8, r = lane % 8;
    // Even chunk steps: 2·k-step for the A and [n][k] B operands, col_chunk0 + dt for .trans.
    for (int step = 0; step < kChunks; step += 2) {
      const std::uint32_t flip = static_cast<std::uint32_t>(step) << 4;
      for (int rows = 0; rows < 64; rows += 16) {  // a warp's first row, or whole-row steps (nt·8, kp·16)
        const auto add = static_cast<std::uint32_t>(rows * kRowBytes);
        EXPECT_EQ(address(a_operand_lane<kHeadDim>(lane, rows), flip, 0),
                  offset<kHeadDim>(rows + kAOrigins[m].row + r, kAOrigins[m].chunk + step))
            << "A, D " << kHeadDim << " lane " << lane << " step " << step << " row0 " << rows;
        EXPECT_EQ(address(b_operand_lane<kHeadDim>(lane), flip, add),
                  offset<kHeadDim>(rows + kBOrigins[m].row + r, kBOrigins[m].chunk + step))
            << "B, D " << kHeadDim << " lane " << lane << " step " << step << " rows " << rows;
        EXPECT_EQ(address(bt_operand_lane<kHeadDim>(lane), flip, add),
                  offset<kHeadDim>(rows + kBtOrigins[m].row + r, kBtOrigins[m].chunk + step))
            << "B.trans, D " << kHeadDim << " lane " << lane << " step " << step << " rows " << rows;
        checked += 3;
      }
    }
  }
  EXPECT_EQ(checked, 32 * (kChunks / 2) * 4 * 3);
}

// copy_tile (attention_kernel.cuh) computes a thread's first swizzled offset once and reaches its
// other copies by adding whole rows (a multiple of 8) and whole swizzle groups (4 or 8 chunks): the
// offset those sums reach must be the swizzled offset of the row and chunk copied.
template <int kHeadDim>
void expect_swizzle_kept_by_whole_groups() {
  constexpr int kChunks = kHeadDim / 8, kRowBytes = kHeadDim * 2, kGroup = kSwizzle8<kHeadDim> ? 8 : 4;
  for (int row = 0; row < 32; ++row)  // a copying thread's first row: below its rows per pass (≤ 32)
    for (int c = 0; c < kGroup; ++c)
      for (int rows = 0; rows < 64; rows += 8)
        for (int g = 0; c + g < kChunks; g += kGroup)
          EXPECT_EQ(offset<kHeadDim>(row, c) + static_cast<std::uint32_t>(rows * kRowBytes + g * 16),
                    offset<kHeadDim>(row + rows, c + g))
              << "D " << kHeadDim << " row " << row << "+" << rows << " chunk " << c << "+" << g;
}

template <int kHeadDim>
void expect_permutation_and_conflict_free() {
  constexpr int kChunks = kHeadDim / 8, kRowBytes = kHeadDim * 2;
  for (int row = 0; row < 64; ++row) {
    std::set<std::uint32_t> slots;
    for (int c = 0; c < kChunks; ++c) {
      const std::uint32_t o = offset<kHeadDim>(row, c);
      ASSERT_GE(o, static_cast<std::uint32_t>(row * kRowBytes)) << "D " << kHeadDim;
      slots.insert((o - row * kRowBytes) / 16);
    }
    EXPECT_EQ(slots.size(), static_cast<std::size_t>(kChunks)) << "D " << kHeadDim << " row " << row;
    EXPECT_EQ(*slots.rbegin(), static_cast<std::uint32_t>(kChunks - 1)) << "D " << kHeadDim << " row " << row;
  }
  // One ldmatrix phase: 8 consecutive rows from a multiple of 8, one logical chunk. 32 banks of 4
  // bytes are 8 groups of 16 bytes; the 8 rows must take all 8.
  for (int row0 = 0; row0 < 64; row0 += 8)
    for (int c = 0; c < kChunks; ++c) {
      std::set<std::uint32_t> groups;
      for (int r = 0; r < 8; ++r) groups.insert((offset<kHeadDim>(row0 + r, c) / 16) % 8);
      EXPECT_EQ(groups.size(), 8u) << "D " << kHeadDim << " rows " << row0 << ".. chunk " << c;
    }
}

}  // namespace

// D 64: 8 chunks, chunk ^ (row % 8). D 96: 12 chunks, chunk ^ ((row / 2) % 4). D 192: 24 chunks,
// chunk ^ (row % 8) inside each group of 8.
TEST(TileSwizzle, OffsetsWorkedByHand) {
  EXPECT_EQ(offset<64>(0, 5), 80u);
  EXPECT_EQ(offset<64>(3, 5), 3u * 128 + (6u << 4));   // 5 ^ 3 = 6
  EXPECT_EQ(offset<96>(3, 5), 3u * 192 + (4u << 4));   // 5 ^ 1 = 4
  EXPECT_EQ(offset<96>(6, 10), 6u * 192 + (9u << 4));  // 10 ^ 3 = 9
  EXPECT_EQ(offset<192>(9, 17), 9u * 384 + (16u << 4));  // 17 ^ 1 = 16
  EXPECT_EQ(offset<192>(7, 20), 7u * 384 + (19u << 4));  // 20 ^ 7 = 19
  EXPECT_EQ(offset<32>(5, 3), 5u * 64 + (1u << 4));     // 3 ^ 2 = 1
}

// The split of a lane offset: a power-of-two row keeps it whole (row_bytes 0), D 96 and 192 carry
// the row apart.
TEST(TileSwizzle, LaneOffsetSplitsRowsThatAreNotAPowerOfTwo) {
  constexpr LaneOffset d128 = lane_offset<128>(9, 3);
  constexpr LaneOffset d96 = lane_offset<96>(9, 3);
  constexpr LaneOffset d192 = lane_offset<192>(9, 3);
  EXPECT_EQ(d128.row_bytes, 0u);
  EXPECT_EQ(d128.chunk, 9u * 256 + (2u << 4));  // 3 ^ 1
  EXPECT_EQ(d96.row_bytes, 9u * 192);
  EXPECT_EQ(d96.chunk, 3u << 4);  // 3 ^ 0
  EXPECT_EQ(d192.row_bytes, 9u * 384);
  EXPECT_EQ(d192.chunk, 2u << 4);  // 3 ^ 1
}

TEST(TileSwizzle, EveryRowIsAPermutationAndEveryLdmatrixPhaseConflictFree) {
  expect_permutation_and_conflict_free<32>();
  expect_permutation_and_conflict_free<64>();
  expect_permutation_and_conflict_free<96>();
  expect_permutation_and_conflict_free<128>();
  expect_permutation_and_conflict_free<192>();
  expect_permutation_and_conflict_free<256>();
}

TEST(TileSwizzle, WholeRowGroupsAndChunkGroupsKeepTheSwizzle) {
  expect_swizzle_kept_by_whole_groups<32>();
  expect_swizzle_kept_by_whole_groups<64>();
  expect_swizzle_kept_by_whole_groups<96>();
  expect_swizzle_kept_by_whole_groups<128>();
  expect_swizzle_kept_by_whole_groups<192>();
  expect_swizzle_kept_by_whole_groups<256>();
}

TEST(TileSwizzle, LaneOffsetsAddressTheMmaFragments) {
  expect_lane_offsets_address_fragments<32>();
  expect_lane_offsets_address_fragments<64>();
  expect_lane_offsets_address_fragments<96>();
  expect_lane_offsets_address_fragments<128>();
  expect_lane_offsets_address_fragments<192>();
  expect_lane_offsets_address_fragments<256>();
}
