#pragma once
// The shared-memory layout of the mma.sync kernels' [rows][head_dim] bf16/fp16 tiles and the
// ldmatrix.x4 lane addresses into them (the forward's and the backward's). Host and device: tests/cuda/tile_swizzle_test.cpp
// checks them on the host against the mma fragment layout and the bank groups.
#include <cstdint>

#include "cuda/hopper/host_device.h"

namespace attnprof::cuda::attention {

// The 8-chunk XOR for a multiple of 8 chunks a row (D 64, 128, 192, 256), else the 4-chunk one
// (D 32, 96: 4 or 12 chunks).
ATTNPROF_HOST_DEVICE constexpr bool swizzle8_for(int head_dim) { return (head_dim / 8) % 8 == 0; }

// A row of a power-of-two number of chunks (D 32, 64, 128, 256): its row bits lie above its chunk
// bits.
ATTNPROF_HOST_DEVICE constexpr bool power_of_two_row(int head_dim) {
  const int chunks = head_dim / 8;
  return (chunks & (chunks - 1)) == 0;
}

// Byte offset of 16-byte chunk `chunk` of row `row` in a [rows][head_dim] tile: chunks XOR-permuted
// within aligned groups (of 8 when swizzle8, else of 4), so the 8 rows an ldmatrix phase reads (8
// consecutive rows from a multiple of 8, one logical chunk) hit 8 different 16-byte bank groups. 8
// chunks per row or a multiple (swizzle8): the 16-byte slot mod 8 is chunk ^ (row % 8). 4 or 12:
// rows start at slot 4·(row % 2) mod 8, and chunk ^ ((row / 2) % 4) in the low two bits completes a
// permutation of 8.
ATTNPROF_HOST_DEVICE constexpr std::uint32_t swizzled_offset(int row, int chunk, int head_dim, bool swizzle8) {
  const int flip = swizzle8 ? (row & 7) : ((row >> 1) & 3);
  return static_cast<std::uint32_t>(row * head_dim * 2 + ((chunk ^ flip) << 4));
}

// A lane's ldmatrix address in a swizzled tile, split so that a k-step's or a column slice's XOR
// of the chunk bits (ldmatrix_x4's flip) leaves the row alone: the address is
// tile + row_bytes + (chunk ^ flip) + whole rows. With a power-of-two row the row bits lie above the
// chunk bits, the whole offset goes in `chunk` and row_bytes is 0 (no register); otherwise (D 96,
// 192) row_bytes is the row's start and `chunk` the swizzled chunk's offset within it.
struct LaneOffset {
  std::uint32_t row_bytes, chunk;
};

template <int kHeadDim>
ATTNPROF_HOST_DEVICE constexpr LaneOffset lane_offset(int row, int chunk) {
  const std::uint32_t offset = swizzled_offset(row, chunk, kHeadDim, swizzle8_for(kHeadDim));
  if constexpr (power_of_two_row(kHeadDim)) {
    return {0, offset};
  } else {
    const auto row_bytes = static_cast<std::uint32_t>(row * kHeadDim * 2);
    return {row_bytes, offset - row_bytes};
  }
}

// The lane offsets of ldmatrix.x4 at k-step 0 (lane L gives row L % 8 of 8×8 matrix L / 8), for a
// tile with kHeadDim columns: the A operand of 16 rows from row0 (matrices: rows 0-7 and 8-15 of
// chunk 0, then of chunk 1); B read as [n][k] (16 n rows: n 0-7 of chunks 0 and 1, then n 8-15);
// B read as [k][n] through .trans (16 k rows × 2 chunks of n, in the A operand's order).
template <int kHeadDim>
ATTNPROF_HOST_DEVICE constexpr LaneOffset a_operand_lane(int lane, int row0) {
  return lane_offset<kHeadDim>(row0 + ((lane / 8) % 2) * 8 + lane % 8, lane / 16);
}
template <int kHeadDim>
ATTNPROF_HOST_DEVICE constexpr LaneOffset b_operand_lane(int lane) {
  return lane_offset<kHeadDim>((lane / 16) * 8 + lane % 8, (lane / 8) % 2);
}
template <int kHeadDim>
ATTNPROF_HOST_DEVICE constexpr LaneOffset bt_operand_lane(int lane) {
  return lane_offset<kHeadDim>(((lane / 8) % 2) * 8 + lane % 8, lane / 16);
}

}  // namespace attnprof::cuda::attention
