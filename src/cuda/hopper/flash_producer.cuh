#pragma once
// The producer warpgroup of the sm_90a flash kernel (flash_traits.cuh): one thread issues every TMA
// load, Q per query tile and K/V key tiles into the shared-memory ring, in the order the tile
// scheduler (flash_tile_scheduler.cuh) gives.
#include <cuda.h>

#include <cstdint>

#include "cuda/hopper/flash_primitives.cuh"
#include "cuda/hopper/flash_tile_scheduler.cuh"
#include "cuda/hopper/flash_traits.cuh"
#include "cuda/hopper/tma.cuh"

namespace attnprof::cuda::hopper::flash_sm90 {

#if ATTNPROF_SM90A
// TMA issue helpers (one thread). Each box is 64 columns (one swizzle atom) of kBlockM or kBlockN
// rows; a tile of D columns is D/64 boxes into consecutive atoms, all completing on one barrier.
template <class Tr>
__device__ __forceinline__ void load_q(const CUtensorMap& q_map, bool seq_inner, unsigned char* smem,
                                       std::uint64_t* full, int b, int h, int m0) {
  mbarrier_arrive_expect_tx(full, Tr::kQBytes);
#pragma unroll
  for (int atom = 0; atom < Tr::kAtoms; ++atom)
    tma_load_attention_box(smem + atom * Tr::kQAtomBytes, q_map, seq_inner, full, atom * 64, m0, h, b,
                           kCacheEvictFirst);
}
template <class Tr>
__device__ __forceinline__ void load_kv_tile(unsigned char* tile, const CUtensorMap& map, bool seq_inner,
                                             std::uint64_t* full, int b, int kv_h, int key0) {
  mbarrier_arrive_expect_tx(full, Tr::kKVBytes);
#pragma unroll
  for (int atom = 0; atom < Tr::kAtoms; ++atom)
    tma_load_attention_box(tile + atom * Tr::kKVAtomBytes, map, seq_inner, full, atom * 64, key0, kv_h, b,
                           kCacheEvictLast);
}

// One thread, for each query tile of this CTA: Q (once the consumers are done with the Q buffer's
// previous tile and the O staged in it), then K and V of key tiles n-1 .. 0 into the ring. A stage is refilled
// only after every consumer warp released it. First rounds pass because a fresh barrier counts as
// having completed the phase before phase 0.
template <class Tr>
__device__ __forceinline__ void produce(const CUtensorMap& q_map, const CUtensorMap& k_map, const CUtensorMap& v_map,
                                        const FlashSm90Params& p, unsigned char* smem, PipelineBarriers& bars) {
  tma_prefetch_map(q_map);
  tma_prefetch_map(k_map);
  tma_prefetch_map(v_map);
  const int tiles = p.m_blocks * p.batch_heads;
  // Hands tile `tile` (at `t`, visiting n_tiles key tiles) to the consumers in `buffer`, whose
  // q_empty phase has completed: its coordinates (TMA-store epilogue), then its Q's TMA load, or for a tile
  // that sees no key an arrive alone.
  auto hand_q = [&](int tile, const TileCoords& t, int n_tiles, int buffer) {
    if constexpr (Tr::kTmaStore) bars.q_tile[buffer] = TileHandoff{tile, t.b, t.h, t.m0};
    if constexpr (Tr::kTimeline) timeline_q_issued<Tr>(p, tile, clock64());
    if (n_tiles == 0)
      mbarrier_arrive(&bars.q_full[buffer]);  // nothing to load: release the consumers at once
    else
      load_q<Tr>(q_map, p.q_seq_inner, smem + buffer * Tr::kQBytes, &bars.q_full[buffer], t.b, t.h, t.m0);
  };
  const bool early_q = Tr::kTmaStore && p.early_next_q;
  bool q_handed = false;  // early_q: this tile's Q went out during the previous tile's loads
  int slot = 0;
  for (int done = 0, tile = cta_tile<Tr>(0);; ++done) {
    const int q_buffer = done % Tr::kQBuffers;
    const std::uint32_t q_phase = (done / Tr::kQBuffers) & 1;
    if (tile >= tiles) {
      if constexpr (Tr::kTmaStore) {  // tell the consumers there is no next tile
        mbarrier_wait_parity(&bars.q_empty[q_buffer], q_phase ^ 1);
        bars.q_tile[q_buffer].tile = -1;
        mbarrier_arrive(&bars.q_full[q_buffer]);
        if (p.tile_counter != nullptr) retire_tile_counter(p.tile_counter);
      }
      return;
    }
    const TileCoords t = tile_coords<Tr>(p, tile);
    const int n_tiles = visible_key_tiles<Tr>(p, t.m0), kv_h = t.h / p.kv_group, slot0 = slot;
    auto load = [&](int it, bool is_k) {  // key tile n_tiles-1-it into ring slot slot0 + it
      const RingSlot<Tr> r(slot0 + it);
      mbarrier_wait_parity(is_k ? &bars.k_empty[r.stage] : &bars.v_empty[r.stage], r.phase ^ 1);
      load_kv_tile<Tr>(smem + (is_k ? Tr::kKOffset : Tr::kVOffset) + r.stage * Tr::kKVBytes, is_k ? k_map : v_map,
                       is_k ? p.k_seq_inner : p.v_seq_inner, is_k ? &bars.k_full[r.stage] : &bars.v_full[r.stage], t.b,
                       kv_h, (n_tiles - 1 - it) * Tr::kBlockN);
    };
    // The first K tile goes before the wait for Q, so it lands while the previous tile's epilogue
    // runs (its stage was released in an earlier main loop: this wait never depends on Q).
    if (n_tiles > 0) load(0, true);
    if (!q_handed) {
      // A buffer's two Q barriers go through one phase per tile it holds, blind tiles (no key
      // visible) included: the consumers stage a blind tile's zeros in Q too, and wait on q_full
      // for it, so they can never be two q_empty phases ahead of this thread (the parity only
      // tells consecutive phases apart).
      mbarrier_wait_parity(&bars.q_empty[q_buffer], q_phase ^ 1);
      hand_q(tile, t, n_tiles, q_buffer);
    }
    q_handed = false;
    // With a tile counter the producer draws the next tile now and hands its Q out as soon as its
    // buffer is free (the end of the previous tile's main loop), polled between this tile's K/V
    // loads: the timeline build measured about 5,900 cycles from a Q's issue to the consumers
    // seeing it, more than the 4,500 of lead that issuing it after this tile's loads gave. Others
    // draw after the loads.
    int next = tiles;
    if (early_q) next = next_tile<Tr>(p, done + 1);
    const int next_buffer = (done + 1) % Tr::kQBuffers;
    const std::uint32_t next_phase = ((done + 1) / Tr::kQBuffers) & 1;
    for (int it = 0; it < n_tiles; ++it) {
      if (it > 0) load(it, true);
      if (early_q && !q_handed && next < tiles && mbarrier_phase_done<false>(&bars.q_empty[next_buffer], next_phase ^ 1)) {
        const TileCoords n = tile_coords<Tr>(p, next);
        hand_q(next, n, visible_key_tiles<Tr>(p, n.m0), next_buffer);
        q_handed = true;
      }
      load(it, false);
    }
    slot += n_tiles;
    if (!early_q) next = next_tile<Tr>(p, done + 1);
    tile = next;
  }
}
#endif  // ATTNPROF_SM90A

}  // namespace attnprof::cuda::hopper::flash_sm90
