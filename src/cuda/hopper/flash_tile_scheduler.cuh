#pragma once
// The tile scheduler of the sm_90a flash kernel (flash_traits.cuh): the order of the query tiles
// (in sections of group_heads (batch, head) pairs, longest first within each: every pair's last
// query block, then the one before), which tile a CTA takes next, the key tiles a query tile
// visits and the K/V ring slot of each; and, host side, the two schedulers a launch picks
// (flash_launch.cuh's Scheduler parameter).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/fused_attention.h"
#include "cuda/hopper/flash_heuristics.h"
#include "cuda/hopper/flash_traits.cuh"
#include "cuda/hopper/sectioned_order.h"

namespace attnprof::cuda::hopper::flash_sm90 {

// Number of key tiles the CTA starting at query row m0 must visit (tiles 0 .. n-1): causal rows see
// keys j <= i + causal_offset, so the CTA's last real row bounds them; 0 when no row sees any key.
template <class Tr>
__host__ __device__ __forceinline__ int visible_key_tiles(const FlashSm90Params& p, int m0) {
  int keys = p.seq_k;
  if (p.causal) {
    const int last_row = (m0 + Tr::kBlockM < p.seq_q ? m0 + Tr::kBlockM : p.seq_q) - 1;
    const long long last_visible = static_cast<long long>(last_row) + p.causal_offset;
    keys = last_visible < 0 ? 0 : static_cast<int>(last_visible + 1 < keys ? last_visible + 1 : keys);
  }
  return (keys + Tr::kBlockN - 1) / Tr::kBlockN;
}

// The K/V ring is indexed by a CTA-wide count of key tiles (it runs on across query tiles when the
// grid is persistent): slot g uses stage g % kStages, whose full/empty barriers are in phase
// (g / kStages) & 1.
template <class Tr>
struct RingSlot {
  int stage;
  std::uint32_t phase;
  __host__ __device__ explicit RingSlot(int g) : stage(g % Tr::kStages), phase((g / Tr::kStages) & 1) {}
};

// Query tile `tile` of the grid's order: in sections of group_heads (batch, head) pairs
// (sectioned_order.h), rank 0 the last query block, so the query blocks that re-read a head's K/V
// run close together (group_heads = batch_heads: every pair's last query block first, then every
// pair's one before it, and so on).
struct TileCoords {
  int b, h, m0;
};
template <class Tr>
__host__ __device__ __forceinline__ TileCoords tile_coords(const FlashSm90Params& p, int tile) {
  const SectionedTile t = sectioned_tile(tile, p.batch_heads, p.group_heads, p.m_blocks);
  return {t.pair / p.heads, t.pair % p.heads, (p.m_blocks - 1 - t.rank) * Tr::kBlockM};
}

#if ATTNPROF_SM90A
// The query tile a CTA takes in its `wave`-th round (wave 0 only when there is a CTA per tile).
template <class Tr>
__device__ __forceinline__ int cta_tile(int wave) {
  const int ctas = static_cast<int>(gridDim.x), cta = static_cast<int>(blockIdx.x);
  return wave * ctas + (Tr::kSnakeOrder && (wave & 1) != 0 ? ctas - 1 - cta : cta);
}

// The CTA's query tile number `done` (its first is blockIdx.x either way). Static (no tile
// counter): the snake deal. Dynamic (a tile counter): the next tile of the order not yet taken by
// any CTA, so a CTA that drew short tiles takes more of them (FA3's scheduler; longest first within
// each L2 section makes it longest-processing-time-first greedy).
template <class Tr>
__device__ __forceinline__ int next_tile(const FlashSm90Params& p, int done) {
  if constexpr (Tr::kTmaStore)  // the TMA-store kernels only: the others keep their producer's registers
    if (p.tile_counter != nullptr) return atomicAdd(p.tile_counter, 1) + static_cast<int>(gridDim.x);
  return cta_tile<Tr>(done);
}

// Once a CTA has drawn past the last tile it draws no more; the last CTA to get there sets the
// counter back to zero for the next launch on the stream (the forward is an ordinary launch: it
// starts once the kernel before it on the stream has finished), so a forward needs no memset. The
// fence orders this CTA's last draw before its retirement.
__device__ __forceinline__ void retire_tile_counter(int* counter) {
  __threadfence();
  if (atomicAdd(counter + 1, 1) == static_cast<int>(gridDim.x) - 1) {
    atomicExch(counter, 0);
    atomicExch(counter + 1, 0);
  }
}
#endif  // ATTNPROF_SM90A

// Host side: how a launch (flash_launch.cuh) deals the query tiles, the Scheduler parameter of
// launch_typed. Each says how many CTAs to launch for `tiles` query tiles, how many (batch, head)
// pairs a section of the order holds (FlashSm90Params::group_heads) and which tile counter, if any,
// the CTAs draw from.

// SMs of the current device, asked once per device (flash_dispatch.cu).
int multiprocessor_count();
// The tile counter for launches on `stream` of the current device: two ints, zeroed once (in
// stream order) and set back to zero by each launch's last CTA (retire_tile_counter). One per stream
// because two forwards on one stream never overlap (ordinary launches), while two streams' may; kept
// for the process (8 bytes a stream). flash_dispatch.cu.
int* tile_counter_for(cudaStream_t stream);

// One CTA per query tile, longest first within L2 sections (l2_section_pairs, as the tile counter's
// below): the hardware hands tiles to SMs as they free up, and the CTAs resident at once read the
// K and V of a few heads, where with one section of every pair a wave's tiles are the last query
// block of up to a wave of heads, each reading its head's whole K and V.
struct CtaPerTileScheduler {
  static long long ctas(long long tiles) { return tiles; }
  static int group_heads(const FusedAttentionArgs& args, int batch_heads) { return l2_section_pairs(args, batch_heads); }
  static int* tile_counter(cudaStream_t) { return nullptr; }
};

// FA3's dynamic scheduler: one CTA per SM; each CTA's producer draws its next query tile from a
// device counter (atomicAdd) once the current tile's Q is out, over an order in L2 sections (as many
// (batch, head) pairs as fit their K and V in 16 MiB, longest first within a section, so the query
// blocks that re-read a head's K/V run together). A CTA that drew short tiles takes more and the SMs
// end together; the last CTA sets the counter back to zero, so a forward stays one kernel.
struct TileCounterScheduler {
  static long long ctas(long long tiles) {
    const long long sms = multiprocessor_count();
    return tiles < sms ? tiles : sms;
  }
  static int group_heads(const FusedAttentionArgs& args, int batch_heads) {
    return l2_section_pairs(args, batch_heads);
  }
  static int* tile_counter(cudaStream_t stream) { return tile_counter_for(stream); }
};

}  // namespace attnprof::cuda::hopper::flash_sm90
