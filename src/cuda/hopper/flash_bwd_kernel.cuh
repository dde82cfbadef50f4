#pragma once
// The sm_90a flash backward kernel (tiles, roles and shared memory: flash_bwd_traits.cuh), the
// preparation kernel before it (Δ, the padded row statistics, the zeroed dQ accumulator) and the
// kernel that turns its fp32 dQ accumulator into dQ. Included by flash_bwd_dispatch.cu only.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

#include "cuda/attention_backward.h"
#include "cuda/backward_delta.cuh"
#include "cuda/device_types.cuh"
#include "cuda/hopper/flash_bwd_traits.cuh"
#include "cuda/hopper/flash_primitives.cuh"
#include "cuda/hopper/swizzle.h"
#include "cuda/hopper/tma.cuh"
#include "cuda/hopper/wgmma.cuh"
#include "cuda/hopper/wgmma_instructions.cuh"
#include "cuda/hopper/wgmma_layout.h"

namespace attnprof::cuda::hopper::flash_bwd_sm90 {

// The query blocks a tile whose keys start at n0 visits for each query head: [first, m_blocks).
// Causal: query row i sees key j iff j <= i + causal_offset, so the first row seeing key n0 is
// n0 − causal_offset.
__device__ __forceinline__ int first_query_block(const BwdSm90Params& p, int n0) {
  if (!p.causal) return 0;
  const int first_row = n0 - p.causal_offset;
  return first_row <= 0 ? 0 : first_row / 64;
}

// Programmatic dependent launch (PTX griddepcontrol, sm_90): the main and conversion kernels are
// launched so that each may start while the kernel before it runs its last CTAs (the preparation
// kernel is an ordinary launch: it starts once everything before it on the stream is done). The
// preparation kernel's CTAs allow the main kernel to launch as they start, the main kernel's once
// their barriers are set up (a dependent's CTAs are scheduled only once every CTA of the grid before
// has allowed it or exited, so they never take an SM a CTA of that grid still waits for); a thread
// waits for the grid before it (its completion and its memory) before it first reads or writes
// what that grid writes. Compiled for another architecture both are no-ops (flash_bwd_dispatch.cu
// launches these kernels on Hopper only). A kernel's profiled interval then includes the time it
// waits: the main and conversion kernels start before the one they follow ends.
__device__ __forceinline__ void wait_for_previous_grid() {
#if ATTNPROF_SM90A
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void allow_next_grid_launch() {
#if ATTNPROF_SM90A
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

#if ATTNPROF_SM90A
using flash_sm90::fast_exp2;
using flash_sm90::named_barrier_arrive;
using flash_sm90::named_barrier_sync;
using flash_sm90::pack_pair;
using flash_sm90::setmaxnreg_dec;
using flash_sm90::setmaxnreg_inc;

// Stores four 8 × 8 b16 matrices transposed: register k holds this thread's pair of matrix k's mma
// fragment (row lane/4, columns 2·(lane%4), +1); lane 8k + r gives the address of row r of the
// stored (transposed) matrix k, 16 bytes.
__device__ __forceinline__ void stmatrix_x4_trans(std::uint32_t address, std::uint32_t r0, std::uint32_t r1,
                                                  std::uint32_t r2, std::uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(address), "r"(r0),
               "r"(r1), "r"(r2), "r"(r3)
               : "memory");
}

// A tile's keys and the query blocks it visits for each query head: [m_first, m_blocks).
struct BwdTile {
  int b, kvh, n0, m_first;
};
template <class Tr>
__device__ __forceinline__ BwdTile bwd_tile(const BwdSm90Params& p, int tile) {
  int key_block = 0;
  const int pair = tile_pair(p, tile, key_block);
  const int n0 = key_block * Tr::kBlockN;
  return {pair / p.kv_heads, pair % p.kv_heads, n0, min(first_query_block(p, n0), p.m_blocks)};
}

// One thread draws the CTA's tiles (its first blockIdx.x, then the counter's) and, for each, loads K
// and V once the consumers are done with the last tile's, then Q and dO of every step into the ring
// (a stage refilled once all 8 consumer warps released it; a fresh barrier counts as having
// completed the phase before 0). The tile goes to the consumers in BwdBarriers::tile with kv_full;
// past the last tile, −1 and a plain arrival.
template <class Tr>
__device__ __forceinline__ void produce(const CUtensorMap& q_map, const CUtensorMap& k_map, const CUtensorMap& v_map,
                                        const CUtensorMap& do_map, const BwdSm90Params& p, unsigned char* smem,
                                        BwdBarriers& bars) {
  tma_prefetch_map(q_map);
  tma_prefetch_map(do_map);
  int tile = static_cast<int>(blockIdx.x), ring = 0;  // ring: the CTA's Q/dO loads so far
  for (std::uint32_t kv_phase = 0;; kv_phase ^= 1) {
    if (tile >= p.tiles) {
      bars.tile = -1;
      mbarrier_arrive(&bars.kv_full);
      return;
    }
    bars.tile = tile;
    const BwdTile c = bwd_tile<Tr>(p, tile);
    mbarrier_arrive_expect_tx(&bars.kv_full, 2 * Tr::kKVBytes);
#pragma unroll
    for (int atom = 0; atom < Tr::kAtoms; ++atom) {
      tma_load_attention_box(smem + Tr::kKOffset + atom * Tr::kKVAtomBytes, k_map, p.k_seq_inner, &bars.kv_full,
                             atom * 64, c.n0, c.kvh, c.b, kCacheEvictLast);
      tma_load_attention_box(smem + Tr::kVOffset + atom * Tr::kKVAtomBytes, v_map, p.v_seq_inner, &bars.kv_full,
                             atom * 64, c.n0, c.kvh, c.b, kCacheEvictLast);
    }
    // The row statistics and the tile counter come from the preparation kernel (a no-op once it
    // has finished).
    wait_for_previous_grid();
    for (int h = c.kvh * p.kv_group; h < (c.kvh + 1) * p.kv_group; ++h) {
      // The padded row statistics of (b, h)'s query block m_block (row_stats_floats).
      const float* stats = p.row_stats + ((static_cast<std::int64_t>(c.b) * p.heads + h) * p.m_blocks + c.m_first) *
                                             (2 * Tr::kBlockM);
      for (int m_block = c.m_first; m_block < p.m_blocks; ++m_block, ++ring, stats += 2 * Tr::kBlockM) {
        const int stage = ring % Tr::kStages, m0 = m_block * Tr::kBlockM;
        const std::uint32_t phase = (ring / Tr::kStages) & 1;
        mbarrier_wait_parity(&bars.qdo_empty[stage], phase ^ 1);
        mbarrier_arrive_expect_tx(&bars.qdo_full[stage], 2 * Tr::kQBytes + Tr::kRowStatsBytes);
        bulk_load(smem + Tr::kRowStatsOffset + stage * Tr::kRowStatsBytes, stats, Tr::kRowStatsBytes,
                  &bars.qdo_full[stage]);
#pragma unroll
        for (int atom = 0; atom < Tr::kAtoms; ++atom) {
          tma_load_attention_box(smem + Tr::kQOffset + stage * Tr::kQBytes + atom * Tr::kQAtomBytes, q_map,
                                 p.q_seq_inner, &bars.qdo_full[stage], atom * 64, m0, h, c.b, kCacheEvictLast);
          tma_load_attention_box(smem + Tr::kDoOffset + stage * Tr::kQBytes + atom * Tr::kQAtomBytes, do_map,
                                 p.do_seq_inner, &bars.qdo_full[stage], atom * 64, m0, h, c.b, kCacheEvictLast);
        }
      }
    }
    // Drawn once the tile's loads are issued (the consumers are a ring's depth behind), so a CTA
    // takes the next tile close to when it is ready for it; loaded once the consumers are done
    // with this tile's K and V.
    tile = atomicAdd(p.tile_counter, 1) + static_cast<int>(gridDim.x);
    mbarrier_wait_parity(&bars.kv_empty, kv_phase);
  }
}

// acc = A·Bᵀ over the head dim, one commit group: A a warpgroup's 64 key rows of K or V (`rows`, in
// 128-key atoms), B a stage's 64 query rows of Q or dO (`tile`, in 64-row atoms), both K-major.
template <class Tr, class T>
__device__ __forceinline__ void issue_transposed_scores(float (&acc)[32], std::uint32_t rows, std::uint32_t tile) {
  const std::uint64_t a = sw128_kmajor_descriptor(rows), b = sw128_kmajor_descriptor(tile);
  wgmma_fence(acc);
#pragma unroll
  for (int k = 0; k < Tr::kSteps; ++k)
    wgmma_ss_m64nNk16<64, T>(acc, advance_descriptor(a, (k / 4) * Tr::kKVAtomBytes + 32 * (k % 4)),
                             advance_descriptor(b, (k / 4) * Tr::kQAtomBytes + 32 * (k % 4)), k > 0);
  wgmma_commit_group();
}

// The same with A from registers (D 64): `rows` the warpgroup's 64 key rows of K or V as the four
// k16 steps' A fragments (load_key_fragments).
template <class T>
__device__ __forceinline__ void issue_transposed_scores_rs(float (&acc)[32], const std::uint32_t (&rows)[4][4],
                                                           std::uint32_t tile) {
  const std::uint64_t b = sw128_kmajor_descriptor(tile);
  wgmma_fence(acc);
#pragma unroll
  for (int k = 0; k < 4; ++k) wgmma_rs_m64nNk16<64, T>(acc, rows[k], advance_descriptor(b, 32 * k), k > 0);
  wgmma_commit_group();
}

// A warpgroup's 64 rows (from `first_row`) of a 128-row, 64-column swizzled tile at `tile` as the
// A fragments of four k16 steps (wgmma_layout.h): ldmatrix .x4 loads matrix j = lane/8 of each
// step, rows 8·(j%2) + lane%8 of the warp's 16 and 16-byte chunk 2·step + j/2, into register j.
__device__ __forceinline__ void load_key_fragments(std::uint32_t (&frag)[4][4], std::uint32_t tile, int first_row,
                                                   int t) {
  const int lane = t % 32, j = lane / 8, r = lane % 8;
  const int row = first_row + (t / 32) * 16 + 8 * (j % 2) + r;  // row % 8 == r
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const std::uint32_t address = tile + static_cast<std::uint32_t>(row * 128 + (((2 * k + j / 2) ^ r) * 16));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(frag[k][0]), "=r"(frag[k][1]), "=r"(frag[k][2]), "=r"(frag[k][3])
                 : "r"(address));
  }
}

// Writes a warpgroup's m64n{D} accumulator (rows: its 64 keys from `key0`) as T, times `scale`,
// into [.., key, d] at `base` with row stride `stride`, keys past seq_k and columns past head_dim
// left out. Staged through `rows` (kStoreBytes of the warpgroup's own, in 64-column atoms of 64
// rows) in a 128-byte swizzle (row r's
// 16-byte chunk c at (c ^ r % 8) · 16: the pairs a warp writes hit 32 banks), then read back a
// 16-byte chunk per thread, a row's chunks by consecutive threads, and stored 16 bytes at a time
// (every row of dK and dV starts 16-byte aligned: attention_backward.cpp's check_fused_rows). Named
// barrier 5 + wg before the read-back and after it, so the next call may write the rows again.
template <class Tr, class T>
__device__ __forceinline__ void store_key_rows(T* base, std::int64_t stride, const float (&acc)[Tr::kHeadAccumulators],
                                               float scale, int key0, const BwdSm90Params& p, unsigned char* rows,
                                               int t, int wg) {
  const auto chunk_offset = [](int row, int chunk) {
    return (chunk / 8) * Tr::kStoreAtomBytes + row * 128 + (((chunk % 8) ^ (row % 8)) * 16);
  };
#pragma unroll
  for (int v = 0; v < Tr::kHeadAccumulators; v += 2) {
    const int row = accumulator_row(t, v), col = accumulator_col(t, v);
    *reinterpret_cast<std::uint32_t*>(rows + chunk_offset(row, col / 8) + (col % 8) * 2) =
        pack_pair<T>(acc[v] * scale, acc[v + 1] * scale);
  }
  named_barrier_sync(5 + wg, kWarpgroupThreads);
  constexpr int kRowChunks = Tr::kHeadDim / 8;
#pragma unroll
  for (int c = t; c < 64 * kRowChunks; c += kWarpgroupThreads) {
    const int row = c / kRowChunks, chunk = c % kRowChunks;
    if (key0 + row >= p.seq_k || chunk * 8 >= p.head_dim) continue;
    const uint4 x = *reinterpret_cast<const uint4*>(rows + chunk_offset(row, chunk));
    *reinterpret_cast<uint4*>(base + (key0 + row) * stride + chunk * 8) = x;
  }
  named_barrier_sync(5 + wg, kWarpgroupThreads);
}

// One consumer warpgroup `wg` on one tile (keys c.n0 + 64·wg ..), whose K and V are in: every
// step (Q/dO ring slots `ring` ..), then K, V and the dS buffers back to the producer, and dK and
// dV out.
template <class Tr, class T>
__device__ __forceinline__ void consume_tile(const BwdSm90Params& p, unsigned char* smem, BwdBarriers& bars,
                                             const BwdTile& c, int wg, int ring) {
  const int t = static_cast<int>(threadIdx.x) % kWarpgroupThreads;
  const std::uint32_t smem_base = shared_address(smem);
  float dv[Tr::kHeadAccumulators], dk[Tr::kHeadAccumulators];
#pragma unroll
  for (int v = 0; v < Tr::kHeadAccumulators; ++v) dv[v] = dk[v] = 0.0f;
  const int key_base = c.n0 + wg * 64;
  const int blocks = p.m_blocks - c.m_first, steps = p.kv_group * blocks;
  // At D 64 the warpgroup's K and V rows stay in registers (16 each) as the A operands of Sᵀ and
  // dPᵀ, which halves those GEMMs' shared-memory reads; at D 128 they would take 64.
  constexpr bool kKeysInRegisters = Tr::kHeadDim == 64;
  std::uint32_t k_frag[4][4], v_frag[4][4];
  if constexpr (kKeysInRegisters) {
    load_key_fragments(k_frag, smem_base + Tr::kKOffset, wg * 64, t);
    load_key_fragments(v_frag, smem_base + Tr::kVOffset, wg * 64, t);
  }
  // The dQ accumulator this warpgroup adds into is zeroed by the preparation kernel (a no-op once
  // it has finished).
  wait_for_previous_grid();

  // The query head and block of step `it`: (kvh·kv_group + it / blocks, m_first + it % blocks), counted
  // on from the step before (a division a step sits in front of the step's GEMMs).
  int h = c.kvh * p.kv_group, m_block = c.m_first - 1;
  for (int it = 0; it < steps; ++it) {
    if (++m_block == p.m_blocks) m_block = c.m_first, ++h;
    const int stage = (ring + it) % Tr::kStages, m0 = m_block * Tr::kBlockM;
    const std::uint32_t phase = ((ring + it) / Tr::kStages) & 1;
    // K and V addresses from a base the compiler cannot see through, so it rebuilds their
    // descriptors each step (a few instructions) instead of keeping 64-bit descriptors in registers.
    std::uint32_t base = smem_base;
    asm volatile("" : "+r"(base));
    const std::uint32_t k_rows = base + Tr::kKOffset + wg * 64 * 128;  // this warpgroup's 64 keys
    const std::uint32_t v_rows = base + Tr::kVOffset + wg * 64 * 128;
    const std::uint32_t q_tile = shared_address(smem + Tr::kQOffset + stage * Tr::kQBytes);
    const std::uint32_t do_tile = shared_address(smem + Tr::kDoOffset + stage * Tr::kQBytes);
    mbarrier_wait_parity(&bars.qdo_full[stage], phase);

    float s[32], dp[32];
    if constexpr (kKeysInRegisters) {
      issue_transposed_scores_rs<T>(s, k_frag, q_tile);   // Sᵀ = K·Qᵀ
      issue_transposed_scores_rs<T>(dp, v_frag, do_tile);  // dPᵀ = V·dOᵀ
    } else {
      issue_transposed_scores<Tr, T>(s, k_rows, q_tile);
      issue_transposed_scores<Tr, T>(dp, v_rows, do_tile);
    }
    // The stage's LSE (base 2) and Δ: this thread's query columns 8j + 2(t%4), + 1 are one float2
    // each. Each is loaded before the wait for the GEMM its use follows (the wait orders every
    // memory access), so the loads' latency passes under the GEMM.
    const float* row_stats = reinterpret_cast<const float*>(smem + Tr::kRowStatsOffset + stage * Tr::kRowStatsBytes);
    float2 lse2[8], delta[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) lse2[j] = *reinterpret_cast<const float2*>(row_stats + 8 * j + 2 * (t % 4));
    wgmma_wait_group<1>(s);

    // Pᵀ: masked scores (key > query + causal_offset), keys past Sk (their zero-filled rows would
    // give P = exp(−LSE), whose dS can overflow 16 bits when the LSE is very negative, and dQ gets
    // inf · 0) and rows past Sq (LSE +inf) give 0.
    // The causal mask, key > query + causal_offset, is (key_base − m0 − causal_offset + the thread's
    // row − its column) > a constant of the register (accumulator_row/col: row 8·((v>>1)&1) +
    // thread's, column 8·(v>>2) + (v&1) + thread's): one compare with an immediate and a select per
    // element. Blocks that do not cross the diagonal compare against a value below every constant.
    const int diagonal = p.causal && key_base + 63 > m0 + p.causal_offset
                             ? key_base - m0 - p.causal_offset + accumulator_row(t, 0) - accumulator_col(t, 0)
                             : -(1 << 30);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int v = 4 * j + i;
        const float x = fast_exp2(s[v] * p.scale_log2 - (i % 2 == 0 ? lse2[j].x : lse2[j].y));
        s[v] = diagonal > 8 * (v >> 2) + (v & 1) - 8 * ((v >> 1) & 1) ? 0.0f : x;
      }
    }
    if (key_base + 63 >= p.seq_k) {  // the warpgroup's keys run past Sk (its last block only)
#pragma unroll
      for (int v = 0; v < 32; ++v)
        if (key_base + accumulator_row(t, v) >= p.seq_k) s[v] = 0.0f;
    }
#pragma unroll
    for (int j = 0; j < 8; ++j)
      delta[j] = *reinterpret_cast<const float2*>(row_stats + Tr::kBlockM + 8 * j + 2 * (t % 4));
    wgmma_wait_group<0>(dp);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
#pragma unroll
      for (int i = 0; i < 4; ++i)
        dp[4 * j + i] = s[4 * j + i] * (dp[4 * j + i] - (i % 2 == 0 ? delta[j].x : delta[j].y));  // dSᵀ
    }

    std::uint32_t a_p[4][4], a_ds[4][4];
#pragma unroll
    for (int step = 0; step < 4; ++step)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        a_p[step][r] = pack_pair<T>(s[rs_a_source_accumulator(step, r, 0)], s[rs_a_source_accumulator(step, r, 1)]);
        a_ds[step][r] = pack_pair<T>(dp[rs_a_source_accumulator(step, r, 0)], dp[rs_a_source_accumulator(step, r, 1)]);
      }
    // dS [query][key] into this warpgroup's 64-key atom of the step's buffer (the A operand of dQ):
    // the warp's 16 keys × 64 queries are 16 blocks of 8 × 8, each register pair (v, v+1) of the
    // thread the block's mma fragment, so stmatrix .trans writes four blocks per instruction as 8
    // query rows of 8 keys (16 bytes each; lane 8k + r gives row r of block k).
    unsigned char* ds_tile = smem + Tr::kDsOffset + (it % 2) * Tr::kDsBytes;
    // Named barriers of the two warpgroups when they take turns (D 128), + the buffer's parity: dS
    // full (both warpgroups' dS written) and dS free (the turn's dQ has read it).
    constexpr int kDsFull = 1, kDsFree = 3;
    const bool dq_turn = Tr::kOwnDq || it % 2 == wg;  // this warpgroup computes dQ this step
    // Taking turns, the buffer's dS was last read by the other warpgroup's dQ two steps ago. The
    // warpgroup's own earlier reads of it (its dQ two steps ago, or at D 64 its own atom's) ended at
    // its own wgmma_wait_group: a wgmma is one operation of the whole warpgroup, so any of its warps
    // seeing it complete means all of its shared-memory reads are done.
    if (!Tr::kOwnDq && !dq_turn && it >= 2) named_barrier_sync(kDsFree + it % 2, Tr::kConsumerThreads);
    {
      // Row 8·(2·step + block/2) + lane%8 of the swizzled atom: its low 3 bits are lane%8, so the
      // swizzled offset is this lane's base plus 2048 bytes a step.
      const int lane = t % 32, block = lane / 8, r = lane % 8;
      const int chunk = 2 * (t / 32) + block % 2;  // of this lane's 8 keys within the warpgroup's 64
      const std::uint32_t base = shared_address(ds_tile + wg * Tr::kDsAtomBytes) +
                                 static_cast<std::uint32_t>((block / 2) * 1024 + r * 128 + ((chunk ^ r) * 16));
      // Block (key half i, query block 2·step + k/2) is register pair 4(2·step + k/2) + 2i, + 1,
      // which a_ds[step][k] holds (rs_a_source_accumulator).
#pragma unroll
      for (int step = 0; step < 4; ++step)
        stmatrix_x4_trans(base + step * 2048, a_ds[step][0], a_ds[step][1], a_ds[step][2], a_ds[step][3]);
    }
    fence_proxy_async_shared();

    const std::uint64_t do_mn = sw128_mnmajor_descriptor(do_tile, Tr::kQAtomBytes);
    const std::uint64_t q_mn = sw128_mnmajor_descriptor(q_tile, Tr::kQAtomBytes);
    wgmma_fence(dv);
#pragma unroll
    for (int step = 0; step < 4; ++step)
      wgmma_rs_m64nNk16_tb<Tr::kHeadDim, T>(dv, a_p[step], advance_descriptor(do_mn, step * 2048));
    wgmma_fence(dk);
#pragma unroll
    for (int step = 0; step < 4; ++step)
      wgmma_rs_m64nNk16_tb<Tr::kHeadDim, T>(dk, a_ds[step], advance_descriptor(q_mn, step * 2048));
    wgmma_commit_group();

    float dq[Tr::kHeadDim / 2];
    if constexpr (Tr::kOwnDq) {
      // dQ of this warpgroup's 64 keys: dS[:, its keys]·K[its keys, :], K read MN-major.
      named_barrier_sync(2 + wg, kWarpgroupThreads);  // the warpgroup's dS is in its atom
      wgmma_fence(dq);
      const std::uint64_t ds_own = sw128_kmajor_descriptor(shared_address(ds_tile + wg * Tr::kDsAtomBytes));
      const std::uint64_t k_mn = sw128_mnmajor_descriptor(k_rows, Tr::kKVAtomBytes);
#pragma unroll
      for (int step = 0; step < 4; ++step)
        wgmma_ss_m64nNk16_tb<Tr::kHeadDim, T>(dq, advance_descriptor(ds_own, 32 * step),
                                             advance_descriptor(k_mn, step * 2048), step > 0);
    } else {
      // dV and dK done, so the stage (Q, dO and the row statistics) goes back to the producer: dQ
      // reads none of it. The turn waits for dV's and dK's GEMMs before issuing dQ's: with all
      // three in flight, ptxas serialises the wgmma for want of registers.
      const auto finish_dv_dk = [&] {
        wgmma_wait_group<0>(dv);
        pin_accumulators(dk);
        pin_registers(a_p[0]), pin_registers(a_p[1]), pin_registers(a_p[2]), pin_registers(a_p[3]);
        pin_registers(a_ds[0]), pin_registers(a_ds[1]), pin_registers(a_ds[2]), pin_registers(a_ds[3]);
        __syncwarp();  // every lane's reads of the row statistics are done before the warp frees the stage
        if (t % 32 == 0) mbarrier_arrive(&bars.qdo_empty[stage]);  // this warp is done with the stage
      };
      if (!dq_turn) {  // the other warpgroup computes this step's dQ
        named_barrier_arrive(kDsFull + it % 2, Tr::kConsumerThreads);
        finish_dv_dk();
        continue;
      }
      finish_dv_dk();
      named_barrier_sync(kDsFull + it % 2, Tr::kConsumerThreads);  // both warpgroups' dS are in the buffer
      wgmma_fence(dq);
      const std::uint64_t ds_all = sw128_kmajor_descriptor(shared_address(ds_tile));
      const std::uint64_t k_mn = sw128_mnmajor_descriptor(base + Tr::kKOffset, Tr::kKVAtomBytes);
#pragma unroll
      for (int step = 0; step < 8; ++step)  // dQ = dS·K over all 128 keys
        wgmma_ss_m64nNk16_tb<Tr::kHeadDim, T>(dq, advance_descriptor(ds_all, (step / 4) * Tr::kDsAtomBytes + 32 * (step % 4)),
                                             advance_descriptor(k_mn, step * 2048), step > 0);
    }
    wgmma_commit_group();
    wgmma_wait_group<0>(dq);
    if (!Tr::kOwnDq && it + 2 < steps) named_barrier_arrive(kDsFree + it % 2, Tr::kConsumerThreads);
    pin_accumulators(dv);
    pin_accumulators(dk);
    pin_registers(a_p[0]), pin_registers(a_p[1]), pin_registers(a_p[2]), pin_registers(a_p[3]);
    pin_registers(a_ds[0]), pin_registers(a_ds[1]), pin_registers(a_ds[2]), pin_registers(a_ds[3]);
    if constexpr (Tr::kOwnDq) {
      __syncwarp();  // every lane's reads of the row statistics are done before the warp frees the stage
      if (t % 32 == 0) mbarrier_arrive(&bars.qdo_empty[stage]);  // this warp is done with Q and dO
    }

    // dQ → shared memory, each warp's 16 rows in its registers' order (lanes write consecutive
    // float2s), then one bulk reduce per warp into the accumulator's tile. With two buffers (D 64)
    // lane 0 waits, after writing, until its previous reduce has read the other buffer, so after
    // __syncwarp that buffer (the next step's) is free again; with one (D 128, a turn every other
    // step) it waits before writing. No barrier across warps.
    const int warp = t / 32, lane = t % 32;
    float* dq_stage = reinterpret_cast<float*>(smem + Tr::kDqOffset) +
                      ((it % Tr::kDqBuffers) * 2 + wg) * Tr::kDqTileFloats + warp * Tr::kDqWarpFloats;
    if constexpr (Tr::kDqBuffers == 1) {
      if (lane == 0) bulk_wait_group_read();
      __syncwarp();
    }
#pragma unroll
    for (int v = 0; v < Tr::kHeadDim / 2; v += 2)
      *reinterpret_cast<float2*>(dq_stage + ((v / 2) * 32 + lane) * 2) = make_float2(dq[v], dq[v + 1]);
    fence_proxy_async_shared();
    if (Tr::kDqBuffers == 2 && lane == 0) bulk_wait_group_read();
    __syncwarp();
    if (lane == 0) {
      const std::int64_t tile = (static_cast<std::int64_t>(c.b) * p.heads + h) * p.m_blocks + m_block;
      bulk_reduce_add_f32(p.dq_accum + tile * Tr::kDqTileFloats + warp * Tr::kDqWarpFloats,
                          dq_stage, Tr::kDqWarpFloats * 4);
      bulk_commit_group();
    }
  }
  if (t % 32 == 0) bulk_wait_group_all();  // the warp's last reduce has read its staging buffer
  __syncwarp();
  // Both warpgroups' GEMMs of the tile are done (each waited for its own): K, V and the dS buffers
  // go back to the producer, and the staging buffers are free.
  constexpr int kTileDone = 7;
  named_barrier_sync(kTileDone, Tr::kConsumerThreads);
  if (threadIdx.x == 0) mbarrier_arrive(&bars.kv_empty);

  T* dk_out = static_cast<T*>(p.dk) + c.b * p.dk_stride[0] + c.kvh * p.dk_stride[1];
  T* dv_out = static_cast<T*>(p.dv) + c.b * p.dv_stride[0] + c.kvh * p.dv_stride[1];
  // The thread's index from a value the compiler cannot see through, so it computes the stores'
  // addresses here instead of keeping them in registers across the steps of every tile.
  int thread = t;
  asm volatile("" : "+r"(thread));
  unsigned char* rows = smem + Tr::kDqOffset + wg * Tr::kDqTileFloats * 4;  // buffer 0 of the warpgroup
  store_key_rows<Tr, T>(dk_out, p.dk_stride[2], dk, p.softmax_scale, key_base, p, rows, thread, wg);
  store_key_rows<Tr, T>(dv_out, p.dv_stride[2], dv, 1.0f, key_base, p, rows + Tr::kStoreBytes, thread, wg);
}

// One consumer warpgroup: the tiles kv_full announces, until −1.
template <class Tr, class T>
__device__ __forceinline__ void consume(const BwdSm90Params& p, unsigned char* smem, BwdBarriers& bars, int wg) {
  int ring = 0;
  for (int n = 0;; ++n) {
    mbarrier_wait_parity(&bars.kv_full, n & 1);
    const int tile = *reinterpret_cast<volatile const int*>(&bars.tile);
    if (tile < 0) return;
    const BwdTile c = bwd_tile<Tr>(p, tile);
    consume_tile<Tr, T>(p, smem, bars, c, wg, ring);
    ring += p.kv_group * (p.m_blocks - c.m_first);
  }
}
#endif  // ATTNPROF_SM90A

// Grid: persistent, a CTA an SM (at most one per tile), each drawing tiles (produce).
template <class Tr, class T>
__global__ void __launch_bounds__(Tr::kThreads, 1)
    flash_backward_sm90_kernel(const __grid_constant__ CUtensorMap q_map, const __grid_constant__ CUtensorMap k_map,
                               const __grid_constant__ CUtensorMap v_map, const __grid_constant__ CUtensorMap do_map,
                               const BwdSm90Params p) {
#if ATTNPROF_SM90A
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = smem_raw + (1024u - shared_address(smem_raw) % 1024u) % 1024u;
  BwdBarriers& bars = *reinterpret_cast<BwdBarriers*>(smem + Tr::kBarrierOffset);
  if (threadIdx.x == 0) {
    mbarrier_init(&bars.kv_full, 1);
    mbarrier_init(&bars.kv_empty, 1);
    for (int stage = 0; stage < Tr::kStages; ++stage) {
      mbarrier_init(&bars.qdo_full[stage], 1);
      mbarrier_init(&bars.qdo_empty[stage], Tr::kConsumerWarps);
    }
    fence_mbarrier_init();
  }
  __syncthreads();
  allow_next_grid_launch();
  const int warpgroup = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x) / kWarpgroupThreads, 0);
  if (warpgroup == Tr::kConsumerWarpgroups) {
    setmaxnreg_dec<Tr::kProducerRegisters>();
    if (threadIdx.x == Tr::kConsumerThreads) produce<Tr>(q_map, k_map, v_map, do_map, p, smem, bars);
  } else {
    setmaxnreg_inc<Tr::kConsumerRegisters>();
    consume<Tr, T>(p, smem, bars, warpgroup);
  }
#else
  (void)q_map, (void)k_map, (void)v_map, (void)do_map, (void)p;
  __trap();
#endif
}

// dQ = scale · accumulator, as T, rows past Sq and columns past head_dim left out: one CTA per
// 64-row tile, which reads the tile (in the order BwdSm90Params::dq_accum describes) with 16-byte
// loads into shared memory as rows, then writes each row's columns 8 at a time (16-byte stores).
template <class Tr, class T>
__global__ void __launch_bounds__(256) flash_backward_dq_convert_kernel(const float* accum, T* dq, int m_blocks,
                                                                         int seq_q, int heads, int head_dim,
                                                                         std::int64_t s0, std::int64_t s1,
                                                                         std::int64_t s2, float scale) {
  constexpr int kRowFloats = Tr::kHeadDim + 4;  // padded: a warp's scattered pairs spread over the banks
  __shared__ __align__(16) float rows[Tr::kBlockM * kRowFloats];
  wait_for_previous_grid();  // the accumulator is the main kernel's
  const std::int64_t tile = blockIdx.x;
  const float4* src = reinterpret_cast<const float4*>(accum + tile * Tr::kBlockM * Tr::kHeadDim);
  for (int i = static_cast<int>(threadIdx.x); i < Tr::kBlockM * Tr::kHeadDim / 4; i += 256) {
    const float4 x = src[i];
    const float pair[2][2] = {{x.x, x.y}, {x.z, x.w}};
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int f = 4 * i + 2 * e;  // the pair's first float in the tile
      const int warp = f / Tr::kDqWarpFloats, g = f % Tr::kDqWarpFloats;
      const int t = warp * 32 + (g / 2) % 32, v = 2 * (g / 64);
      float* at = rows + accumulator_row(t, v) * kRowFloats + accumulator_col(t, v);
      *reinterpret_cast<float2*>(at) = make_float2(pair[e][0], pair[e][1]);
    }
  }
  __syncthreads();
  const int m0 = static_cast<int>(tile % m_blocks) * Tr::kBlockM;
  const std::int64_t bh = tile / m_blocks;
  T* out = dq + (bh / heads) * s0 + (bh % heads) * s1;
  constexpr int kChunks = Tr::kHeadDim / 8;
  for (int c = static_cast<int>(threadIdx.x); c < Tr::kBlockM * kChunks; c += 256) {
    const int r = c / kChunks, col = (c % kChunks) * 8;
    if (m0 + r >= seq_q || col >= head_dim) continue;
    const float4 lo = *reinterpret_cast<const float4*>(rows + r * kRowFloats + col);
    const float4 hi = *reinterpret_cast<const float4*>(rows + r * kRowFloats + col + 4);
    const float y[8] = {lo.x * scale, lo.y * scale, lo.z * scale, lo.w * scale,
                        hi.x * scale, hi.y * scale, hi.z * scale, hi.w * scale};
    store_floats<T, 8>(out + static_cast<std::int64_t>(m0 + r) * s2 + col, y);
  }
}

// Before the main kernel, one CTA per (batch, head, 64-row query block): each row's Δ =
// rowsum(dO ⊙ O) in fp32 (four threads a row, 16-byte loads, summed by two shuffles) into args.delta,
// the block's padded row statistics (row_stats_floats: LSE·log2e, +inf past Sq and where the row saw
// no key, then Δ, 0 past Sq), and the block's dQ accumulator tile zeroed; CTA 0 zeroes the main
// kernel's tile counter.
template <class Tr, class T>
__global__ void __launch_bounds__(256) flash_backward_prep_kernel(const FusedBackwardArgs args, float* row_stats,
                                                                  float* dq_accum, int m_blocks, int* tile_counter) {
  allow_next_grid_launch();
  if (blockIdx.x == 0 && threadIdx.x == 0) *tile_counter = 0;
  const std::int64_t block = blockIdx.x, bh = block / m_blocks;
  const int seq_q = static_cast<int>(args.fwd.seq_q), r = static_cast<int>(threadIdx.x) / 4;
  const int row = static_cast<int>(block % m_blocks) * 64 + r, part = static_cast<int>(threadIdx.x) % 4;
  float sum = row < seq_q ? delta_part<T>(args, bh / args.fwd.heads, bh % args.fwd.heads, row, part, 4) : 0.0f;
  sum += __shfl_xor_sync(0xffffffffu, sum, 1);
  sum += __shfl_xor_sync(0xffffffffu, sum, 2);
  if (part == 0) {
    const float l = row < seq_q ? args.fwd.lse[bh * seq_q + row] : -INFINITY;
    row_stats[block * 128 + r] = l == -INFINITY ? INFINITY : l * kLog2e;
    row_stats[block * 128 + 64 + r] = row < seq_q ? sum : 0.0f;
    if (row < seq_q) args.delta[bh * seq_q + row] = sum;
  }
  float4* tile = reinterpret_cast<float4*>(dq_accum + block * Tr::kBlockM * Tr::kHeadDim);
  for (int i = static_cast<int>(threadIdx.x); i < Tr::kBlockM * Tr::kHeadDim / 4; i += 256)
    tile[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
}

}  // namespace attnprof::cuda::hopper::flash_bwd_sm90
