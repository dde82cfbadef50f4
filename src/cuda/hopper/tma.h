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

}  // namespace attnprof::cuda::hopper
