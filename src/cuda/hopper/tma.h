#pragma once
// Host side of the Tensor Memory Accelerator: a 2-D tensor map over a row-major bf16 matrix in
// device memory whose box (the tile one cp.async.bulk.tensor copies) is 64 rows × 64 columns with
// the 128-byte swizzle (swizzle.h), ready to pass by value as a `const __grid_constant__ CUtensorMap`
// kernel parameter (tma.cuh loads with it).
//
// cuTensorMapEncodeTiled is a driver function; libattnprof never links libcuda, so it is fetched
// with cudaGetDriverEntryPointByVersion (DESIGN.md). <cuda.h> is included for its types only.
#include <cuda.h>

#include <cstdint>

namespace attnprof::cuda::hopper {

inline constexpr std::uint32_t kTileRows = 64;
inline constexpr std::uint32_t kTileCols = 64;          // 64 bf16 = 128 B, the SWIZZLE_128B limit
inline constexpr std::uint32_t kTileBytes = kTileRows * kTileCols * 2;  // the expect_tx count of one load

// The map of `rows` × `cols` bf16 at `device_data` (16-byte aligned) with `row_stride` elements
// between rows (a multiple of 8, so the byte stride is a multiple of 16), box 64 × 64, SWIZZLE_128B,
// out-of-bounds elements read as zero. Throws attnprof::Error naming the call or the argument
// (cudaGetDriverEntryPointByVersion unavailable, a driver without the symbol, a bad alignment or
// stride, cuTensorMapEncodeTiled's CUresult).
CUtensorMap make_bf16_tile_map(const void* device_data, std::uint64_t rows, std::uint64_t cols,
                               std::uint64_t row_stride);

// A rank-4 map over an attention tensor indexed [batch, head, seq, d] of 2-byte elements (bf16 or
// fp16) with unit stride in d and the given element strides for the other three, so bhsd and bshd
// (or any 16-byte-aligned strides) are one map each, no copies. Its box is 64 columns of d (128 B,
// the SWIZZLE_128B row) × `box_rows` rows of seq, of one (batch, head): a load at seq row r of head h
// never reads another head's rows, and rows past `seq` are zero-filled (they still count towards the
// transaction bytes: a box is always box_rows · 128 B). head_dim must be a multiple of 8: a tile of
// D columns is ⌈D/64⌉ such boxes, stored one after another (one 64-column swizzle atom each), the
// columns past head_dim zero-filled by the load and left out by a store (a kernel specialised for a
// larger D runs a smaller one through the same boxes).
//
// Dimension order in the map: d first, then seq and head in ascending stride order (bhsd: seq, head;
// bshd: head, seq), then batch. The device must pass coordinates in the same order: `seq_inner`
// says which (tma.cuh's tma_load_attention_box takes it).
struct AttentionTileMap {
  CUtensorMap map;
  bool seq_inner = true;
};
// Throws attnprof::Error naming the argument (alignment, a stride not a multiple of 8 elements, a
// head_dim not a multiple of 8, box_rows outside 1..256) or cuTensorMapEncodeTiled's CUresult.
AttentionTileMap make_attention_tile_map(const void* device_data, CUtensorMapDataType element_type,
                                         std::uint64_t batch, std::uint64_t heads, std::uint64_t seq,
                                         std::uint64_t head_dim, std::int64_t batch_stride, std::int64_t head_stride,
                                         std::int64_t seq_stride, std::uint32_t box_rows);

}  // namespace attnprof::cuda::hopper
