#pragma once
// Probe kernels: each Hopper building block (wgmma.cuh, tma.cuh, swizzle.h) run once on the
// smallest input that exercises it, so tests/cuda/hopper_test.cpp can compare its output with a
// CPU reference before the blocks are composed into the sm_90a flash kernel. Test-only: built into
// the GPU test binary, not the library.
// All pointers are device pointers; bf16 data is passed as its 16-bit patterns. Each launcher
// launches one CTA of one warpgroup on `stream` and does not synchronise; it throws attnprof::Error
// when the current device is not compute capability 9.0 (the kernels are compiled for sm_90a only;
// their sm_80 builds trap).
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace attnprof::cuda::hopper {

// One m64n64k16 wgmma from shared memory: out = c + a·bᵀ (64×64 fp32, row-major), where a is 64×16
// (M×K) and b 64×16 (N×K) row-major bf16, 16-byte aligned. The threads copy a and b into 128B-swizzled
// shared memory with swizzle128_chunk_offset, load c into the accumulator through
// accumulator_row/col, and store the result back through the same layout.
void run_wgmma_probe(float* out, const std::uint16_t* a, const std::uint16_t* b, const float* c, cudaStream_t stream);

// One TMA load of box (tile_row, tile_col) of `map` (tma.h: 64×64 bf16, SWIZZLE_128B) into shared
// memory, completing on an mbarrier; the 8192 bytes of shared memory are copied verbatim (still
// swizzled) to `smem_image`.
void run_tma_tile_probe(void* smem_image, const CUtensorMap& map, int tile_row, int tile_col, cudaStream_t stream);

// The chain: TMA-loads A = rows [64·a_tile_row, +64) × K 0..63 of `a_map` (M×K) and B = rows
// [64·b_tile_row, +64) × K 0..63 of `b_map` (N×K) on one mbarrier, then four k16 wgmma steps read the
// swizzled tiles in place (descriptor start +32 B per step): out = A·Bᵀ (64×64 fp32, row-major).
// The accumulator starts as NaN and the first step has scale-d 0, so that path is checked too.
void run_tma_wgmma_probe(float* out, const CUtensorMap& a_map, int a_tile_row, const CUtensorMap& b_map,
                         int b_tile_row, cudaStream_t stream);

}  // namespace attnprof::cuda::hopper
