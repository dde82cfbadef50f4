#pragma once
// One consumer warpgroup's main loop of the sm_90a flash kernel (flash_traits.cuh): S = Q·Kᵀ and
// O += P·V by wgmma from the shared-memory ring, masking and the online softmax on the accumulator
// registers, in FA3's overlapped schedule with the warpgroups taking turns at the tensor cores.
#include <cuda.h>

#include <cmath>
#include <cstdint>

#include "cuda/hopper/flash_primitives.cuh"
#include "cuda/hopper/flash_tile_scheduler.cuh"
#include "cuda/hopper/flash_traits.cuh"
#include "cuda/hopper/swizzle.h"
#include "cuda/hopper/tma.cuh"
#include "cuda/hopper/wgmma.cuh"
#include "cuda/hopper/wgmma_instructions.cuh"
#include "cuda/hopper/wgmma_layout.h"

namespace attnprof::cuda::hopper::flash_sm90 {

#if ATTNPROF_SM90A
// -inf where key col is past Sk or (causal) past row + causal_offset. Accumulator register
// 4j + 2i + e holds row lane/4 + 8i of the warp's 16, column 8j + 2·(lane%4) + e of the tile.
template <class Tr>
__device__ __forceinline__ void mask_scores(float (&s)[Tr::kSAccumulators], const FlashSm90Params& p, int warp_row0,
                                            int key0, int lane) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int row = warp_row0 + lane / 4 + 8 * i;
    int limit = p.seq_k;  // first key this row may not see
    if (p.causal) limit = min(limit, row + p.causal_offset + 1);
    const int first_col = key0 + 2 * (lane % 4);
#pragma unroll
    for (int j = 0; j < Tr::kBlockN / 8; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e)
        if (first_col + 8 * j + e >= limit) s[4 * j + 2 * i + e] = -INFINITY;
  }
}

// Online softmax of one tile: new running max per row (the 4 lanes of a quad share a row), the
// running sum rescaled, S replaced by P = exp2(S·c − max·c), c = softmax_scale·log2 e. O must be
// multiplied by `rescale` before the next P·V is added (rescale_o), which the overlapped schedule
// does only once the previous P·V has retired.
template <class Tr>
__device__ __forceinline__ void online_softmax(float (&s)[Tr::kSAccumulators], float (&row_max)[2],
                                               float (&row_sum)[2], float (&rescale)[2], float scale_log2) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    float mx = row_max[i];
#pragma unroll
    for (int j = 0; j < Tr::kBlockN / 8; ++j) mx = fmaxf(mx, fmaxf(s[4 * j + 2 * i], s[4 * j + 2 * i + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    // A row that has seen no visible key keeps max -inf: use 0 so exp2 gives 0, not NaN.
    const float max_scaled = mx == -INFINITY ? 0.0f : mx * scale_log2;
    // Lazy (kDoubleBufferQ): exactly 1 when the max did not change (the FFMA below would give exp2 of its
    // rounding error, not always 1), so rescale_o can be skipped.
    rescale[i] = Tr::kLazyRescale && mx == row_max[i] ? 1.0f : fast_exp2(row_max[i] * scale_log2 - max_scaled);
    row_max[i] = mx;
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < Tr::kBlockN / 8; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float prob = fast_exp2(s[4 * j + 2 * i + e] * scale_log2 - max_scaled);
        s[4 * j + 2 * i + e] = prob;
        if constexpr (!Tr::kOnesColumn) sum += prob;  // ones column: the P·V GEMM sums the row
      }
    // This thread's columns; the quad is summed at the end.
    if constexpr (!Tr::kOnesColumn) row_sum[i] = row_sum[i] * rescale[i] + sum;
  }
}

template <class Tr>
__device__ __forceinline__ void rescale_o(float (&o)[Tr::kOAccumulators], const float (&rescale)[2]) {
#pragma unroll
  for (int j = 0; j < Tr::kOAccumulators / 4; ++j)  // the ones column's row sums too
#pragma unroll
    for (int v = 0; v < 4; ++v) o[4 * j + v] *= rescale[v / 2];
}

// P (fp32 in the S registers) → the A fragments of the P·V k16 steps (wgmma_layout.h).
template <class Tr, class T>
__device__ __forceinline__ void pack_p(std::uint32_t (&p_frag)[Tr::kPSteps][4], const float (&s)[Tr::kSAccumulators]) {
#pragma unroll
  for (int step = 0; step < Tr::kPSteps; ++step)
#pragma unroll
    for (int r = 0; r < 4; ++r)
      p_frag[step][r] = pack_pair<T>(s[rs_a_source_accumulator(step, r, 0)], s[rs_a_source_accumulator(step, r, 1)]);
}

template <class Tr, class T>
__device__ __forceinline__ void pv_wgmma(float (&o)[Tr::kOAccumulators], const std::uint32_t (&a)[4],
                                         std::uint64_t v_desc) {
  wgmma_rs_m64nNk16_tb<Tr::kOnesColumn ? 72 : Tr::kHeadDim, T>(o, a, v_desc);
}

// What one consumer warpgroup needs to issue its GEMMs: 64 query rows from m0 + 64·consumer, in
// Q buffer q_buffer.
template <class Tr>
struct ConsumerView {
  int consumer, warp, lane, wg_row0, warp_row0;
  std::uint32_t q_base, k_base, v_base, ones_base;
  __device__ ConsumerView(unsigned char* smem, int m0, int q_buffer = 0) {
    const int t = static_cast<int>(threadIdx.x) % kWarpgroupThreads;
    consumer = static_cast<int>(threadIdx.x) / kWarpgroupThreads;
    warp = t / 32;
    lane = t % 32;
    wg_row0 = m0 + 64 * consumer;
    warp_row0 = wg_row0 + 16 * warp;
    q_base = shared_address(smem) + q_buffer * Tr::kQBytes + consumer * 64 * 128;  // its 64 rows of each Q atom
    k_base = shared_address(smem + Tr::kKOffset);
    v_base = shared_address(smem + Tr::kVOffset);
    ones_base = shared_address(smem + Tr::kOnesOffset);
  }
};

// Issues S = Q·Kᵀ[stage] (scale-d 0 on the first k-step drops the previous tile's P) and commits it.
template <class Tr, class T>
__device__ __forceinline__ void issue_qk(float (&s)[Tr::kSAccumulators], const ConsumerView<Tr>& c, int stage) {
  wgmma_fence(s);
  // Each k16 step's descriptors are the tile's two stepped by one add (advance_descriptor). Past
  // D 128 Q's base passes an empty asm at every key tile (it hides that the base does not change), so
  // Q's descriptor is rebuilt there rather than hoisted out of the key-tile loop. That kept D 256 from
  // spilling when every step rebuilt its own descriptor (the 16 hoisted ones spilled 64 bytes); with
  // the stepped one, ptxas spills nothing either way at the 224- and 240-register budgets, and this
  // is the form measured (at 208 registers D 256 spills 112 bytes, D 192 nothing).
  std::uint32_t q_base = c.q_base;
  if constexpr (Tr::kHeadDim > 128) asm volatile("" : "+r"(q_base));
  const std::uint64_t qd = sw128_kmajor_descriptor(q_base), kd = sw128_kmajor_descriptor(c.k_base + stage * Tr::kKVBytes);
#pragma unroll
  for (int ks = 0; ks < Tr::kQKSteps; ++ks) {
    const std::uint32_t k_step = (ks % 4) * 32u;  // +32 B per k16 step inside an atom
    wgmma_ss_m64nNk16<Tr::kBlockN, T>(s, advance_descriptor(qd, (ks / 4) * Tr::kQAtomBytes + k_step),
                                      advance_descriptor(kd, (ks / 4) * Tr::kKVAtomBytes + k_step), ks > 0);
  }
  wgmma_commit_group();
}

// Issues O += P·V[stage] and commits it.
template <class Tr, class T>
__device__ __forceinline__ void issue_pv(float (&o)[Tr::kOAccumulators], const std::uint32_t (&p_frag)[Tr::kPSteps][4],
                                         const ConsumerView<Tr>& c, int stage) {
  wgmma_fence(o);  // after the rescale and the P packing (ordinary register writes)
  const std::uint64_t vd = sw128_mnmajor_descriptor(c.v_base + stage * Tr::kKVBytes, Tr::kKVAtomBytes);
#pragma unroll
  for (int step = 0; step < Tr::kPSteps; ++step) {
    if constexpr (Tr::kOnesColumn) {
      // Ones column: the atom after V's one (columns 64-71) is the ones, wherever the step's 16 rows
      // start, so each step's descriptor has its own atom stride.
      const std::uint32_t v_rows = c.v_base + stage * Tr::kKVBytes + step * 16 * 128;
      pv_wgmma<Tr, T>(o, p_frag[step], sw128_mnmajor_descriptor(v_rows, c.ones_base - v_rows));
    } else {
      pv_wgmma<Tr, T>(o, p_frag[step], advance_descriptor(vd, step * 16 * 128));
    }
  }
  wgmma_commit_group();
}

template <class Tr>
__device__ __forceinline__ void mask_if_needed(float (&s)[Tr::kSAccumulators], const FlashSm90Params& p,
                                               const ConsumerView<Tr>& c, int key0) {
  const bool crosses_diagonal = p.causal && key0 + Tr::kBlockN - 1 > c.wg_row0 + p.causal_offset;
  if (key0 + Tr::kBlockN > p.seq_k || crosses_diagonal) mask_scores<Tr>(s, p, c.warp_row0, key0, c.lane);
}

// FA3's schedule: S(i+1) = Q·K(i+1)ᵀ and O += P(i)·V(i) are issued together, the softmax of
// tile i+1 runs while P(i)·V(i) is still on the tensor cores, and O is rescaled only after that
// GEMM retires; the warpgroups take turns issuing (pingpong). V(i) is released one step later
// than K(i), as the producer expects (it loads them in that order anyway).
template <class Tr, class T>
__device__ __forceinline__ void mainloop_overlapped(float (&o)[Tr::kOAccumulators], float (&row_max)[2],
                                                    float (&row_sum)[2], const FlashSm90Params& p,
                                                    PipelineBarriers& bars, const ConsumerView<Tr>& c, int n_tiles,
                                                    int slot0) {
  float s[Tr::kSAccumulators];
#pragma unroll
  for (int v = 0; v < Tr::kSAccumulators; ++v) s[v] = 0.0f;
  std::uint32_t p_frag[Tr::kPSteps][4];
  float rescale[2];
  if (c.consumer == 0) named_barrier_arrive(kFirstTurnBarrier, 2 * kWarpgroupThreads);  // warpgroup 0 goes first

  // Tile 0 (the last key tile, so the masked one).
  const RingSlot<Tr> first(slot0);
  mbarrier_wait_parity(&bars.k_full[first.stage], first.phase);
  take_gemm_turn(c.consumer);
  issue_qk<Tr, T>(s, c, first.stage);
  pass_gemm_turn<Tr>(c.consumer);
  wgmma_wait_group<0>(s);
  if (c.lane == 0) mbarrier_arrive(&bars.k_empty[first.stage]);
  mask_if_needed<Tr>(s, p, c, (n_tiles - 1) * Tr::kBlockN);
  online_softmax<Tr>(s, row_max, row_sum, rescale, p.scale_log2);  // O is still 0: no rescale
  pack_p<Tr, T>(p_frag, s);

  for (int it = 1; it < n_tiles; ++it) {
    const RingSlot<Tr> r(slot0 + it), prev(slot0 + it - 1);
    const int stage = r.stage, prev_stage = prev.stage;
    const std::uint32_t phase = r.phase, prev_phase = prev.phase;
    const int key0 = (n_tiles - 1 - it) * Tr::kBlockN;
    mbarrier_wait_parity(&bars.k_full[stage], phase);
    take_gemm_turn(c.consumer);
    issue_qk<Tr, T>(s, c, stage);
    mbarrier_wait_parity(&bars.v_full[prev_stage], prev_phase);
    issue_pv<Tr, T>(o, p_frag, c, prev_stage);
    pass_gemm_turn<Tr>(c.consumer);
    wgmma_wait_group<1>(s);  // S(it) has retired; P(it-1)·V(it-1) may still run
    if (c.lane == 0) mbarrier_arrive(&bars.k_empty[stage]);
    mask_if_needed<Tr>(s, p, c, key0);
    online_softmax<Tr>(s, row_max, row_sum, rescale, p.scale_log2);
    wgmma_wait_group<0>(o);
#pragma unroll
    for (int step = 0; step < Tr::kPSteps; ++step) pin_registers(p_frag[step]);
    if (c.lane == 0) mbarrier_arrive(&bars.v_empty[prev_stage]);
    // Lazy (kDoubleBufferQ): a row whose max did not change has rescale exactly 1 (online_softmax), so
    // skip the multiplication when no row of the warp changed; the vote keeps it warp-uniform.
    if (!Tr::kLazyRescale || __any_sync(0xffffffffu, rescale[0] != 1.0f || rescale[1] != 1.0f))
      rescale_o<Tr>(o, rescale);
    pack_p<Tr, T>(p_frag, s);
  }

  const RingSlot<Tr> last(slot0 + n_tiles - 1);
  const int last_stage = last.stage;
  mbarrier_wait_parity(&bars.v_full[last_stage], last.phase);
  take_gemm_turn(c.consumer);
  issue_pv<Tr, T>(o, p_frag, c, last_stage);
  pass_gemm_turn<Tr>(c.consumer);
  wgmma_wait_group<0>(o);
#pragma unroll
  for (int step = 0; step < Tr::kPSteps; ++step) pin_registers(p_frag[step]);
  if (c.lane == 0) mbarrier_arrive(&bars.v_empty[last_stage]);
  // The last warpgroup's last pass left 128 arrivals on warpgroup 0's barrier: consume them, so
  // every barrier ends with no phase half done. (Letting the turn run on across tiles instead,
  // so that warpgroup 0 need not wait here for warpgroup 1's last issue, made the tile-counter
  // kernel's main loop 6% slower per key tile.)
  if (c.consumer == 0) take_gemm_turn(0);
}
#endif  // ATTNPROF_SM90A

}  // namespace attnprof::cuda::hopper::flash_sm90
