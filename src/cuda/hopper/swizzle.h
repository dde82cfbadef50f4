#pragma once
// The 128-byte swizzle of a shared-memory tile: what TMA writes with CU_TENSOR_MAP_SWIZZLE_128B and
// what a wgmma descriptor with layout type 1 (128B) reads (research/hopper-flash.md §3.2).
//
// The tile is rows of 128 bytes (64 bf16), starting on a 1024-byte boundary. Within each group of
// 8 rows (one 1024-byte swizzle atom) the 16-byte chunk c of row r is stored at chunk c ^ (r % 8),
// so the 8 rows' chunk 0 fall in 8 different bank groups. Hardware applies the XOR to address bits
// [4,7) from bits [7,10); that equals this formula only when the tile base is 1024-byte aligned.
#include <cstdint>

#include "cuda/hopper/host_device.h"

namespace attnprof::cuda::hopper {

inline constexpr std::uint32_t kSwizzleRowBytes = 128;     // one row of the swizzle atom
inline constexpr std::uint32_t kSwizzleAtomBytes = 1024;   // 8 rows; the tile alignment
inline constexpr std::uint32_t kSwizzleChunkBytes = 16;    // the unit that moves

// Byte offset, from the tile base, of 16-byte chunk `chunk` (0..7) of row `row`.
ATTNPROF_HOST_DEVICE constexpr std::uint32_t swizzle128_chunk_offset(std::uint32_t row, std::uint32_t chunk) {
  return row * kSwizzleRowBytes + ((chunk ^ (row & 7u)) * kSwizzleChunkBytes);
}

// Byte offset of bf16 element (row, col), col in [0, 64): its chunk is col / 8, moved as a whole.
ATTNPROF_HOST_DEVICE constexpr std::uint32_t swizzle128_bf16_offset(std::uint32_t row, std::uint32_t col) {
  return swizzle128_chunk_offset(row, col / 8u) + (col % 8u) * 2u;
}

}  // namespace attnprof::cuda::hopper
