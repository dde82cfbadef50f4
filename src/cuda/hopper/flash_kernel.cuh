#pragma once
// The sm_90a flash kernel's entry (flash_traits.cuh): shared memory and barriers set up, then the
// last warpgroup produces (flash_producer.cuh) and the others consume, each query tile its main
// loop (flash_mainloop.cuh) then its epilogue (flash_epilogue.cuh).
#include <cuda.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "cuda/hopper/flash_epilogue.cuh"
#include "cuda/hopper/flash_mainloop.cuh"
#include "cuda/hopper/flash_primitives.cuh"
#include "cuda/hopper/flash_producer.cuh"
#include "cuda/hopper/flash_tile_scheduler.cuh"
#include "cuda/hopper/flash_traits.cuh"
#include "cuda/hopper/tma.cuh"

namespace attnprof::cuda::hopper::flash_sm90 {

#if ATTNPROF_SM90A
// One consumer warpgroup, one query tile: the main loop, then the epilogue. `done` counts this
// CTA's earlier query tiles (the Q buffer and its barriers' phase), `slot0` its earlier key tiles
// (the ring slot). With the TMA-store epilogue, consumers come in with Q already there (consume waited for it to learn
// the tile); `begin` is the clock before that wait (timeline build).
template <class Tr, class T>
__device__ __forceinline__ void consume_tile(const CUtensorMap& o_map, const FlashSm90Params& p, unsigned char* smem,
                                             PipelineBarriers& bars, int b, int h, int m0, int n_tiles, int done,
                                             int slot0, int tile, std::uint64_t begin) {
  const int q_buffer = done % Tr::kQBuffers;
  const std::uint32_t q_phase = (done / Tr::kQBuffers) & 1;
  const ConsumerView<Tr> c(smem, m0, q_buffer);
  const int t = static_cast<int>(threadIdx.x) % kWarpgroupThreads;
  float o[Tr::kOAccumulators];
#pragma unroll
  for (int v = 0; v < Tr::kOAccumulators; ++v) o[v] = 0.0f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.0f, 0.0f};
  if constexpr (!Tr::kTmaStore)
    mbarrier_wait_parity(&bars.q_full[q_buffer], q_phase);  // also for a blind tile: keeps the Q phases in step
  if constexpr (Tr::kTimeline)
    if (t == 0) {
      timeline_mark<Tr>(p, tile, c.consumer, 0,
                        (static_cast<std::uint64_t>(sm_id()) << 40) | (static_cast<std::uint64_t>(c.consumer) << 32) |
                            static_cast<std::uint32_t>(n_tiles));
      timeline_mark<Tr>(p, tile, c.consumer, 1, begin);
      timeline_mark<Tr>(p, tile, c.consumer, 2, clock64());
    }
  if (n_tiles > 0) {
    mainloop_overlapped<Tr, T>(o, row_max, row_sum, p, bars, c, n_tiles, slot0);
  }

  if constexpr (Tr::kTimeline)
    if (t == 0) timeline_mark<Tr>(p, tile, c.consumer, 3, clock64());
  store_o<Tr, T>(o_map, p, smem, bars, c, o, row_max, row_sum, t, b, h, m0, q_buffer, tile);
}

// One consumer warpgroup: every query tile of this CTA (one, unless the grid is persistent).
template <class Tr, class T>
__device__ __forceinline__ void consume(const CUtensorMap& o_map, const FlashSm90Params& p, unsigned char* smem,
                                        PipelineBarriers& bars) {
  const int tiles = p.m_blocks * p.batch_heads;
  int slot = 0;
  if constexpr (Tr::kTmaStore) {
    // The producer names each tile in shared memory (PipelineBarriers::q_tile): read it once Q is there.
    const bool recorder = Tr::kTimeline && threadIdx.x % kWarpgroupThreads == 0;
    int last_tile = -1;
    std::uint64_t first_begin_ns = 0;
    for (int done = 0;; ++done) {
      const int q_buffer = done % Tr::kQBuffers;
      const std::uint64_t begin = recorder ? clock64() : 0;
      // The lane's global-timer anchors (timeline build): read at its first start and its end
      // only, since a %globaltimer read costs hundreds of cycles; the host places the other
      // clocks between them.
      if (recorder && done == 0) first_begin_ns = global_timer_ns();
      mbarrier_wait_parity(&bars.q_full[q_buffer], (done / Tr::kQBuffers) & 1);
      // Lane 0 reads it (the lane that later arrives on q_empty, so the read is ordered before the
      // producer's next write by program order alone) and hands it to the warp.
      int4 coords = make_int4(0, 0, 0, 0);
      if (threadIdx.x % 32 == 0) coords = ld_shared_v4_s32(&bars.q_tile[q_buffer].tile);
      const int tile = __shfl_sync(0xffffffffu, coords.x, 0);
      if (tile < 0) {
        if constexpr (Tr::kTimeline)
          if (recorder && last_tile >= 0) {
            const int consumer = static_cast<int>(threadIdx.x) / kWarpgroupThreads;
            timeline_mark<Tr>(p, last_tile, consumer, 7, clock64());
            timeline_mark<Tr>(p, last_tile, consumer, 6, global_timer_ns());
          }
        break;
      }
      const int b = __shfl_sync(0xffffffffu, coords.y, 0), h = __shfl_sync(0xffffffffu, coords.z, 0);
      const int m0 = __shfl_sync(0xffffffffu, coords.w, 0);
      const int n_tiles = visible_key_tiles<Tr>(p, m0);
      consume_tile<Tr, T>(o_map, p, smem, bars, b, h, m0, n_tiles, done, slot, tile, begin);
      if constexpr (Tr::kTimeline)
        if (recorder && done == 0)
          timeline_mark<Tr>(p, tile, static_cast<int>(threadIdx.x) / kWarpgroupThreads, 5, first_begin_ns);
      slot += n_tiles;
      last_tile = tile;
    }
    // The last TMA store must be done before the CTA (and its shared memory) goes away (kPerWarpStore: each
    // warp's own).
    if (threadIdx.x % (Tr::kPerWarpStore ? 32 : kWarpgroupThreads) == 0) bulk_wait_group_all();
  } else {
    for (int done = 0, tile = cta_tile<Tr>(0); tile < tiles; tile = cta_tile<Tr>(++done)) {
      const TileCoords t = tile_coords<Tr>(p, tile);
      const int n_tiles = visible_key_tiles<Tr>(p, t.m0);
      consume_tile<Tr, T>(o_map, p, smem, bars, t.b, t.h, t.m0, n_tiles, done, slot, tile, 0);
      slot += n_tiles;
    }
  }
}
#endif  // ATTNPROF_SM90A

template <class Tr, class T>
__global__ void __launch_bounds__(Tr::kThreads, 1)
    flash_forward_sm90_kernel(const __grid_constant__ CUtensorMap q_map, const __grid_constant__ CUtensorMap k_map,
                              const __grid_constant__ CUtensorMap v_map, const __grid_constant__ CUtensorMap o_map,
                              const FlashSm90Params p) {
#if ATTNPROF_SM90A
  extern __shared__ unsigned char smem_raw[];
  // Swizzle atoms must start on 1024-byte boundaries (swizzle.h); the launch adds 1 KiB of slack.
  unsigned char* smem = smem_raw + (1024u - shared_address(smem_raw) % 1024u) % 1024u;
  PipelineBarriers& bars = *reinterpret_cast<PipelineBarriers*>(smem + Tr::kBarrierOffset);

  if (threadIdx.x == 0) {
    for (int buffer = 0; buffer < Tr::kQBuffers; ++buffer) {
      mbarrier_init(&bars.q_full[buffer], 1);
      mbarrier_init(&bars.q_empty[buffer], Tr::kConsumerWarps);
    }
    for (int stage = 0; stage < Tr::kStages; ++stage) {
      mbarrier_init(&bars.k_full[stage], 1);
      mbarrier_init(&bars.v_full[stage], 1);
      mbarrier_init(&bars.k_empty[stage], Tr::kConsumerWarps);
      mbarrier_init(&bars.v_empty[stage], Tr::kConsumerWarps);
    }
    fence_mbarrier_init();
  }
  if constexpr (Tr::kOnesColumn) {  // 1.0 in bf16 or fp16, read by every P·V wgmma
    const std::uint32_t one_pair = std::is_same_v<T, __half> ? 0x3C003C00u : 0x3F803F80u;
    for (int i = static_cast<int>(threadIdx.x); i < Tr::kOnesBytes / 4; i += Tr::kThreads)
      reinterpret_cast<std::uint32_t*>(smem + Tr::kOnesOffset)[i] = one_pair;
    fence_proxy_async_shared();
  }
  __syncthreads();

  // Warpgroups 0 .. kConsumerWarpgroups-1 consume, the last one produces: one branch each of a
  // single if/else, on a value made visibly warp-uniform by the shuffle (as CUTLASS does; ptxas
  // 13.0 gives the same allocation without it). setmaxnreg needs every warp of the warpgroup.
  const int warpgroup = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x) / kWarpgroupThreads, 0);
  if (warpgroup == Tr::kConsumerWarpgroups) {
    setmaxnreg_dec<Tr::kProducerRegisters>();
    if (threadIdx.x == Tr::kConsumerThreads) produce<Tr>(q_map, k_map, v_map, p, smem, bars);
  } else {
    setmaxnreg_inc<Tr::kConsumerRegisters>();
    if constexpr (Tr::kTmaStore)
      if (threadIdx.x == 0) tma_prefetch_map(o_map);
    consume<Tr, T>(o_map, p, smem, bars);
  }
#else
  (void)q_map, (void)k_map, (void)v_map, (void)o_map, (void)p;
  __trap();
#endif
}

}  // namespace attnprof::cuda::hopper::flash_sm90
