#pragma once
// `flash`'s backward on sm_90a (FlashAttention-3's shape, plain CUDA + inline PTX): the kernel's
// tiles, shared-memory layout, register split and parameters. The kernel is flash_bwd_kernel.cuh,
// its host launch flash_bwd_dispatch.cu.
//
// A tile is (batch, kv head, kBlockN = 128 keys); the tiles run in tile_pair's order (below: longest
// first in sections of group_pairs pairs). The grid is persistent, a CTA an SM: a CTA's first tile
// is its blockIdx.x, each next one the first of the order no CTA has taken yet (a device counter the
// preparation kernel zeroes), so a CTA that drew short tiles takes more and the SMs end together.
// 384 threads, consumer warpgroups 0 and 1 (64 keys each, setmaxnreg 240) and a producer warpgroup
// (24 registers; one thread draws the tiles and issues the TMA loads). K and V of a tile's keys
// are loaded once; then, for each query head of the GQA group and each 64-row query block that
// sees any of the keys (causal: from the first block reaching the diagonal), the producer loads Q,
// dO and the block's LSE and Δ (padded by the kernel before: row_stats_floats) into a 2-stage ring
// (its count runs on across the CTA's tiles) and each consumer warpgroup runs
//   Sᵀ = K·Qᵀ, dPᵀ = V·dOᵀ            wgmma m64n64k16, D/16 steps each: SS (both K-major) at D 128;
//                                      at D 64 RS, the warpgroup's K and V rows held in registers
//                                      from the start (ldmatrix, 16 registers each)
//   Pᵀ = exp2(Sᵀ·scale·log2e − LSE·log2e) (masked: 0), dSᵀ = Pᵀ ⊙ (dPᵀ − Δ)   in registers
//   dV += Pᵀ·dO, dK += dSᵀ·Q          wgmma m64n{D}k16 RS (Pᵀ, dSᵀ repacked in registers as the A
//                                      fragments; dO, Q read MN-major), 4 steps each
//   dSᵀ → shared memory as dS [64 query rows × 128 keys] (K-major for the next GEMM), warpgroup w
//   writing keys 64w..; then dQ by wgmma SS at the full head dim with K read MN-major:
//     D 64 (kOwnDq): after a barrier of its own 128 threads, each warpgroup computes the partial dQ
//       of its 64 keys, dS[:, its keys]·K[its keys, :], m64n64k16, 4 steps, and reduces it into the
//       accumulator itself: within a tile no barrier joins the two warpgroups (only the Q/dO ring,
//       released by all eight warps; one barrier at the tile's end), so one's softmax runs under
//       the other's GEMMs (cuDNN's backward, 64 keys a CTA, adds dQ at that grain too);
//     D 128: the warpgroups take turns, warpgroup (step % 2) computing the step's whole dQ = dS·K
//       over all 128 keys, m64n128k16, 8 steps, after the other has arrived on a named barrier
//       (dS full) — the other goes on to its next step, so the two run out of step — and then
//       arriving on another (dS free) that the other waits on before it writes that dS buffer
//       again. Its dQ's 64 accumulators need dV's and dK's GEMMs finished first (with Pᵀ's and
//       dSᵀ's fragments also live, ptxas serialises the wgmma for want of registers);
//   each warp stages its 16 rows of the dQ in shared memory (in its registers' order,
//   conflict-free) and one of its lanes adds them to the fp32 dQ accumulator in global memory with
//   one bulk reduce (cp.reduce.async.bulk .add.f32): the accumulator holds each (batch, head,
//   64-row query block)'s 64 × D tile as four warps' 16 rows, in that order, which the conversion
//   kernel reads back.
// Once every consumer is done with a tile's K and V (and the dS buffers), the producer loads the
// next tile's K and V and its first Q and dO while the consumers write the tile's dK (times the
// scale) and dV, staged through the warpgroup's own dQ staging buffer in shared memory for 16-byte
// coalesced stores (store_key_rows): one writer per element,
// fixed-order sums, bit-identical run to run. dQ's sums arrive in whatever order the CTAs run: not
// bit-identical (the deterministic mode runs attention_backward.cu's kernels instead). A second
// kernel turns the accumulator into dQ (times the scale, in the element type); one before
// (flash_backward_prep_kernel) computes Δ = rowsum(dO ⊙ O), pads the row statistics and zeroes the
// accumulator.
//
// Shared memory (128-byte swizzle atoms of 64 columns, TMA-loaded): K and V 128 rows × D, Q and dO
// 2 stages × 64 rows × D, dS 2 buffers × 64 rows × 128 keys, dQ's staging (kDqBuffers × 2
// warpgroups × 64 rows × D fp32), the LSE and Δ of 2 stages × 64 rows: 161 KiB at D 64, 225 KiB
// at D 128, + 1 KiB alignment + barriers. Head dims that are multiples of 8 up to 64 run on the D 64 kernel,
// 72..128 on the D 128 one (TMA zero-fills the columns past head_dim; they are never stored).
#include <cstdint>

#include "cuda/hopper/flash_traits.cuh"
#include "cuda/hopper/host_device.h"
#include "cuda/hopper/sectioned_order.h"

namespace attnprof::cuda::hopper::flash_bwd_sm90 {

using flash_sm90::kLog2e;
using flash_sm90::kWarpgroupThreads;

struct BwdBarriers {
  std::uint64_t kv_full;                    // K and V of the tile's keys (one TMA transaction)
  std::uint64_t kv_empty;                   // the consumers are done with the tile's K, V and dS
  std::uint64_t qdo_full[2], qdo_empty[2];  // Q and dO of a query block, per ring stage
  int tile;                                 // the tile kv_full announces; −1: the CTA is done
};

template <int kHeadDim_>
struct BwdSm90Traits {
  static constexpr int kHeadDim = kHeadDim_;
  // Who computes a step's dQ (see above): at D 64 each warpgroup for its own keys; at D 128 the
  // warpgroups in turn, for all 128 keys.
  static constexpr bool kOwnDq = kHeadDim == 64;
  static constexpr int kBlockM = 64;   // query rows per step
  static constexpr int kBlockN = 128;  // keys per CTA, 64 per consumer warpgroup
  static constexpr int kConsumerWarpgroups = 2;
  static constexpr int kConsumerWarps = 4 * kConsumerWarpgroups;
  static constexpr int kConsumerThreads = kWarpgroupThreads * kConsumerWarpgroups;
  static constexpr int kThreads = kConsumerThreads + kWarpgroupThreads;
  static constexpr int kProducerRegisters = 24;
  static constexpr int kConsumerRegisters = 240;
  static constexpr int kStages = 2;
  static constexpr int kAtoms = kHeadDim / 64;
  static constexpr int kKVAtomBytes = kBlockN * 128;  // 128 key rows of one 64-column atom
  static constexpr int kQAtomBytes = kBlockM * 128;   // 64 query rows of one atom
  static constexpr int kKVBytes = kAtoms * kKVAtomBytes;
  static constexpr int kQBytes = kAtoms * kQAtomBytes;
  static constexpr int kDsAtomBytes = kBlockM * 128;     // 64 query rows × 64 keys
  static constexpr int kDsBytes = 2 * kDsAtomBytes;      // 64 query rows × 128 keys
  static constexpr int kKOffset = 0;
  static constexpr int kVOffset = kKOffset + kKVBytes;
  static constexpr int kQOffset = kVOffset + kKVBytes;
  static constexpr int kDoOffset = kQOffset + kStages * kQBytes;
  static constexpr int kDsOffset = kDoOffset + kStages * kQBytes;
  static constexpr int kDqTileFloats = kBlockM * kHeadDim;  // a query block's dQ (the accumulator's tile)
  static constexpr int kDqWarpFloats = kDqTileFloats / 4;    // one warp's 16 rows of it
  // dQ staging buffers a warpgroup: 2 at D 64 (a warp writes one while its reduce reads the other);
  // 1 at D 128, where a warpgroup stages dQ every other step.
  static constexpr int kDqBuffers = kOwnDq ? 2 : 1;
  static constexpr int kDqOffset = kDsOffset + 2 * kDsBytes;  // [buffer][warpgroup][kDqTileFloats]
  // Per stage: the query block's LSE (base 2) and Δ, 64 floats each, loaded with Q and dO.
  static constexpr int kRowStatsBytes = 2 * kBlockM * 4;
  static constexpr int kRowStatsOffset = kDqOffset + kDqBuffers * kConsumerWarpgroups * kDqTileFloats * 4;
  static constexpr int kBarrierOffset = kRowStatsOffset + kStages * kRowStatsBytes;
  static constexpr int kSmemBytes = 1024 /* alignment slack */ + kBarrierOffset + static_cast<int>(sizeof(BwdBarriers));
  static constexpr int kSteps = kHeadDim / 16;     // k16 steps of Sᵀ and dPᵀ
  static constexpr int kHeadAccumulators = kHeadDim / 2;  // m64n{D} fp32 per thread (dK, dV)
  // store_key_rows stages a warpgroup's 64 rows of dK and of dV, in 64-column swizzle atoms, in its
  // first dQ staging buffer.
  static constexpr int kStoreAtomBytes = 64 * 128;
  static constexpr int kStoreBytes = kAtoms * kStoreAtomBytes;
  static_assert(kHeadDim == 64 || kHeadDim == 128, "the backward's kernel head dims");
  static_assert(2 * kStoreBytes <= kDqTileFloats * 4, "dK and dV staged in a dQ staging buffer");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per CTA on sm_90");
  static_assert(kProducerRegisters * kWarpgroupThreads + kConsumerRegisters * kConsumerThreads <=
                    (65536 / kThreads) / 8 * 8 * kThreads,
                "setmaxnreg can only redistribute the registers the CTA was launched with");
};

// The fp32 dQ accumulator's floats: a 64 × kHeadDim tile per (batch, head, 64-row query block).
inline std::int64_t dq_accumulator_floats(std::int64_t batch_heads, std::int64_t seq_q, int kernel_head_dim) {
  return batch_heads * ((seq_q + 63) / 64) * 64 * kernel_head_dim;
}

// The padded row statistics (flash_backward_prep_kernel): a 64-row block per (batch, head, query block),
// the block's LSE·log2e (+inf past Sq and where the row saw no key) then its Δ (0 past Sq).
inline std::int64_t row_stats_floats(std::int64_t batch_heads, std::int64_t seq_q) {
  return batch_heads * ((seq_q + 63) / 64) * 2 * 64;
}

// The main kernel's tile counter, after the row statistics: one int, in 4 floats (16 bytes).
inline constexpr std::int64_t kTileCounterFloats = 4;

struct BwdSm90Params {
  // Zeroed before the kernel: tile (b·H + h)·m_blocks + block of kDqTileFloats, its warp u's rows at
  // u·kDqWarpFloats, accumulator register v of lane l at float (v/2·32 + l)·2 + v%2.
  float* dq_accum = nullptr;
  float* row_stats = nullptr;       // row_stats_floats, written by flash_backward_prep_kernel
  void* dk = nullptr;
  void* dv = nullptr;
  std::int64_t dk_stride[3]{}, dv_stride[3]{};  // batch, head, seq (elements)
  int head_dim = 0, heads = 0, kv_heads = 0, kv_group = 1, seq_q = 0, seq_k = 0, m_blocks = 0;
  int causal = 0, causal_offset = 0;
  // The tiles: one per (batch, kv head) pair and key block, in sections of group_pairs pairs;
  // `tiles` = pairs · key_blocks. tile_counter: the tiles drawn past the grid's first (zeroed by
  // flash_backward_prep_kernel).
  int pairs = 0, key_blocks = 0, group_pairs = 1, tiles = 0;
  int* tile_counter = nullptr;
  float softmax_scale = 1.0f, scale_log2 = 1.0f;
  bool q_seq_inner = true, k_seq_inner = true, v_seq_inner = true, do_seq_inner = true;
};

// The CTA `tile` of the grid's order: longest first (with a causal mask, of either alignment, the
// first query block a key block visits never decreases with the key block, so key block 0 visits
// the most), every pair of a section at key block 0, then at 1, …, in sections of group_pairs
// (batch, kv head) pairs, so the tiles re-reading a pair's Q and dO run close together. Returns the
// pair (b·kv_heads + kvh) and sets the key block.
ATTNPROF_HOST_DEVICE constexpr int tile_pair(const BwdSm90Params& p, int tile, int& key_block) {
  const SectionedTile t = sectioned_tile(tile, p.pairs, p.group_pairs, p.key_blocks);
  key_block = t.rank;
  return t.pair;
}

}  // namespace attnprof::cuda::hopper::flash_bwd_sm90
