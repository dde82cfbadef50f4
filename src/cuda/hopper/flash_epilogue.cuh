#pragma once
// The epilogue of the sm_90a flash kernel (flash_traits.cuh): a consumer warpgroup's O, normalised
// by its row sums, written out; the fp32 LSE straight from registers.
#include <cuda.h>

#include <cmath>
#include <cstdint>

#include "cuda/hopper/flash_mainloop.cuh"
#include "cuda/hopper/flash_primitives.cuh"
#include "cuda/hopper/flash_traits.cuh"
#include "cuda/hopper/swizzle.h"
#include "cuda/hopper/tma.cuh"

namespace attnprof::cuda::hopper::flash_sm90 {

#if ATTNPROF_SM90A
// One consumer warpgroup's epilogue of one query tile: O / row sum (and the LSE) out of the
// accumulators, through shared memory, to global memory; the Q buffer handed back to the producer.
// With the TMA-store epilogue, Q goes back first and O is staged in the O tile and written by TMA
// stores (a warpgroup's 64 rows by its thread 0, or with kPerWarpStore a warp's 16 rows by its lane
// 0); without it, O is staged in the warpgroup's own Q rows and written by 16-byte coalesced stores
// (the tensors' head_dim / 8 chunks of each row: the TMA store clips at D by itself).
// t: the thread's index in its warpgroup.
template <class Tr, class T>
__device__ __forceinline__ void store_o(const CUtensorMap& o_map, const FlashSm90Params& p, unsigned char* smem,
                                       PipelineBarriers& bars, const ConsumerView<Tr>& c,
                                       const float (&o)[Tr::kOAccumulators], const float (&row_max)[2],
                                       const float (&row_sum)[2], int t, int b, int h, int m0, int q_buffer,
                                       int tile) {
  if constexpr (Tr::kTmaStore) {
    // This warp's wgmmas have all retired (the main loop waited for each): Q can go back to the
    // producer now. The O tile is free once this warpgroup's previous TMA store has read it.
    __syncwarp();
    if (c.lane == 0) mbarrier_arrive(&bars.q_empty[q_buffer]);
    if constexpr (Tr::kPerWarpStore) {  // each warp stores its own 16 rows: its own previous store must have read them
      if (c.lane == 0) bulk_wait_group_read();
      __syncwarp();
    } else if (t == 0) {
      bulk_wait_group_read();
    }
  }
  // Epilogue. Every warp of this warpgroup must be past its last wgmma reading Q before its rows of
  // the Q tile are overwritten with O (TMA-store epilogue: past the wait for the O tile; a per-warp
  // store needs no barrier).
  if constexpr (!Tr::kPerWarpStore) named_barrier_sync(1 + c.consumer, kWarpgroupThreads);
  const std::uint32_t staging =
      shared_address(smem) + (Tr::kTmaStore ? static_cast<int>(Tr::kOOffset) : q_buffer * Tr::kQBytes);
  T* out = static_cast<T*>(p.o) + b * p.o_stride[0] + h * p.o_stride[1];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    float sum = row_sum[i];
    if constexpr (Tr::kOnesColumn) {
      sum = o[Tr::kHeadDim / 2 + 2 * i];  // column 64 of the row: the sum of the bf16 P that multiplied V
    } else {
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    }
    // A row that sees no key comes out as zeros.
    const float inv = sum > 0.0f ? (Tr::kPerWarpStore ? fast_reciprocal(sum) : 1.0f / sum) : 0.0f;
    const int row = c.warp_row0 + c.lane / 4 + 8 * i;
    if constexpr (!Tr::kOnesColumn)  // the launcher sends a forward that wants the LSE to the fp32-row-sum kernel
      if (p.lse != nullptr && c.lane % 4 == 0 && row < p.seq_q)
        p.lse[(static_cast<std::int64_t>(b) * p.heads + h) * p.seq_q + row] =
            sum > 0.0f ? row_max[i] * p.softmax_scale + logf(sum) : -INFINITY;
    const int tile_row = row - m0;
#pragma unroll
    for (int j = 0; j < Tr::kHeadDim / 8; ++j) {
      const std::uint32_t addr = staging + (j / 8) * Tr::kQAtomBytes + swizzle128_chunk_offset(tile_row, j % 8) +
                                 4 * (c.lane % 4);
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(pack_pair<T>(o[4 * j + 2 * i] * inv, o[4 * j + 2 * i + 1] * inv))
                   : "memory");
    }
  }
  if constexpr (Tr::kTmaStore) {
    // One TMA store box of kStoreRows rows: a warpgroup's 64 (issued by its thread 0 once every
    // warp has staged its rows) or, with kPerWarpStore, a warp's 16 (issued by its lane 0).
    fence_proxy_async_shared();  // this thread's st.shared, before the TMA store reads them
    if constexpr (Tr::kPerWarpStore)
      __syncwarp();
    else
      named_barrier_sync(1 + c.consumer, kWarpgroupThreads);
    if (Tr::kPerWarpStore ? c.lane == 0 : t == 0) {
      const int staged_row = Tr::kPerWarpStore ? 64 * c.consumer + 16 * c.warp : c.consumer * 64;
      const int first_row = Tr::kPerWarpStore ? c.warp_row0 : c.wg_row0;
#pragma unroll
      for (int atom = 0; atom < Tr::kAtoms; ++atom)
        tma_store_attention_box(smem + Tr::kOOffset + atom * Tr::kQAtomBytes + staged_row * 128, o_map,
                                p.o_seq_inner, atom * 64, first_row, h, b);
      bulk_commit_group();
      if constexpr (Tr::kTimeline)
        if (t == 0) timeline_mark<Tr>(p, tile, c.consumer, 4, clock64());
    }
    return;
  }
  named_barrier_sync(1 + c.consumer, kWarpgroupThreads);
  constexpr int kChunksPerRow = Tr::kHeadDim / 8;
  for (int i = t; i < 64 * kChunksPerRow; i += kWarpgroupThreads) {
    const int local_row = i / kChunksPerRow, chunk = i % kChunksPerRow;
    const int row = c.wg_row0 + local_row;
    // Rows past Sq and, on a kernel wider than the tensors' D, the zero columns past D are not the
    // output's (past D lies the next row or head in bshd).
    if (row >= p.seq_q || chunk * 8 >= p.head_dim) continue;
    uint4 value;
    const std::uint32_t addr =
        staging + (chunk / 8) * Tr::kQAtomBytes + swizzle128_chunk_offset(64 * c.consumer + local_row, chunk % 8);
    asm volatile("ld.shared.v4.b32 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(value.x), "=r"(value.y), "=r"(value.z), "=r"(value.w)
                 : "r"(addr)
                 : "memory");
    *reinterpret_cast<uint4*>(out + row * p.o_stride[2] + chunk * 8) = value;
  }
  __syncwarp();  // every lane's shared-memory reads are done before the warp frees the Q tile
  if (c.lane == 0) mbarrier_arrive(&bars.q_empty[q_buffer]);
}
#endif  // ATTNPROF_SM90A

}  // namespace attnprof::cuda::hopper::flash_sm90
