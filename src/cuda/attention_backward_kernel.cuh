#pragma once
// The FlashAttention-2 backward kernels (host side: attention_backward.cu). The scores are
// recomputed from Q, K and the forward's LSE: P = exp(scale·Q·Kᵀ − LSE), so no S×S tensor exists.
//
//   flash_bwd_dot_do_o_kernel  Δ[i] = Σ_d dO[i,d]·O[i,d] in fp32, one warp per query row.
//   flash_bwd_dkdv_kernel      one CTA per (batch, kv head, kBlockN keys, kOutDim-column slice);
//                              each of its 4 warps owns 16 keys. It walks the query heads of its
//                              GQA group and, per head, the query blocks that see any of its keys
//                              (causal: blocks wholly above the diagonal are skipped), and
//                              accumulates in fp32 registers dV += Pᵀ·dO and dK += dSᵀ·Q with
//                              Sᵀ = K·Qᵀ, dPᵀ = V·dOᵀ, dSᵀ = Pᵀ ⊙ (dPᵀ − Δ). dK (times the scale)
//                              and dV are written once.
//   flash_bwd_dq_kernel        one CTA per (batch, head, kBlockM query rows); each warp owns 16 rows.
//                              It walks the key blocks its rows see and accumulates dQ += dS·K in
//                              fp32 registers, written once (times the scale).
//
// Deterministic by construction: no atomics, every output element has exactly one writer, and every
// sum (the Δ shuffle tree, the loops over heads, query blocks and key blocks, the MMA k-steps) runs
// in a fixed order — the gradients are bit-identical run to run.
//
// All GEMMs are mma.sync m16n8k16 (bf16/fp16 in, fp32 accumulate) on tiles in shared memory, loaded
// with cp.async and read with ldmatrix through the forward's swizzle and helpers
// (attention_kernel.cuh). The mma A operands are row-major tiles (K and V in dK/dV, Q and dO in dQ),
// the B operands the other tiles read as [n][k] (ldmatrix) or [k][n] (ldmatrix.trans), and P and dS
// go from the accumulators straight into A operands (never through memory), as P does in the
// forward. Rows past Sq or Sk and the head-dim chunks past args.fwd.head_dim (a multiple of 8 up to
// kHeadDim) are zero-filled on load; a masked score, a row past Sq and a row with LSE −inf (it saw
// no key) give P = 0, so they contribute nothing and such rows get dQ = 0.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/attention_backward.h"
#include "cuda/attention_kernel.cuh"
#include "cuda/backward_delta.cuh"
#include "cuda/device_types.cuh"

namespace attnprof::cuda::attention_backward {

using attention::a_operand_lane;
using attention::b_operand_lane;
using attention::bt_operand_lane;
using attention::cp_async_commit;
using attention::cp_async_wait_all;
using attention::fast_exp2;
using attention::kLog2e;
using attention::LaneOffset;
using attention::ldmatrix_x4;
using attention::MmaType;
using attention::swizzle;

// kBlockM query rows × kBlockN keys per tile, 4 warps; kHeadDim 32, 64, 96, 128, 192 or 256. A CTA
// accumulates kOutDim of the gradient's columns (blockIdx.z: which kOutDim-column slice): the
// score-shaped products run over the whole head dim in every slice's CTA, the gradient's columns
// are split among them (at D 192 and 256 the full-width dK and dV accumulators would not fit a
// thread's 255 registers).
template <int kHeadDim_, int kBlockM_, int kBlockN_, int kOutDim_ = kHeadDim_>
struct BwdTraits {
  static constexpr int kHeadDim = kHeadDim_, kBlockM = kBlockM_, kBlockN = kBlockN_, kOutDim = kOutDim_;
  static constexpr int kWarps = 4, kThreads = 128;
  static constexpr int kColumnSlices = kHeadDim / kOutDim;
  // The forward's traits for a 128-thread CTA at this head dim: the swizzle and the cp.async share
  // of a thread in a [rows][kHeadDim] tile (copy_tile).
  using Tile = attention::Traits<kHeadDim, 64, 64, kWarps, false>;
  static constexpr int kRowBytes = kHeadDim * 2;
  static constexpr int kKSteps = kHeadDim / 16;  // k-steps over the head dim
  static constexpr int kDTiles = kOutDim / 8;    // n-tiles of a CTA's slice of dQ, dK, dV
  static constexpr int kRowsPerPass = kThreads / Tile::kCopyWidth;
  static_assert(kHeadDim % kOutDim == 0 && kOutDim % 16 == 0, "whole slices of ldmatrix.x4 column pairs");
  static_assert(kBlockM % kRowsPerPass == 0 && kBlockN % kRowsPerPass == 0, "whole cp.async passes");
  static_assert(kBlockM % 16 == 0 && kBlockN % 16 == 0, "whole 16-row MMA tiles");
};

// cp.async of rows [first_row, first_row + kRows) of a [rows_total][head_dim] slice (row stride
// `stride` elements) into a swizzled [kRows][kHeadDim] tile at `tile`; rows past rows_total and
// chunks past head_chunks are zero-filled.
template <class Tr, int kRows, class T>
__device__ __forceinline__ void load_tile(std::uint32_t tile, const T* base, std::int64_t stride, int first_row,
                                          int rows_total, int head_chunks) {
  using Tile = typename Tr::Tile;
  const int tid = static_cast<int>(threadIdx.x);
  const int row0 = tid / Tile::kCopyWidth, chunk = tid % Tile::kCopyWidth;
  const T* src = base + static_cast<std::int64_t>(first_row + row0) * stride + chunk * 8;
  attention::copy_tile<Tile, kRows>(tile + swizzle<Tile>(row0, chunk), src, Tr::kRowsPerPass * static_cast<int>(stride),
                                    rows_total - first_row - row0, head_chunks - chunk, base);
}

// load_tile of the same rows of two slices (K and V, or Q and dO) into two tiles, committed as one
// cp.async group.
template <class Tr, int kRows, class T>
__device__ __forceinline__ void load_tile_pair(std::uint32_t tile_a, const T* a, std::int64_t stride_a,
                                               std::uint32_t tile_b, const T* b, std::int64_t stride_b, int first_row,
                                               int rows_total, int head_chunks) {
  load_tile<Tr, kRows>(tile_a, a, stride_a, first_row, rows_total, head_chunks);
  load_tile<Tr, kRows>(tile_b, b, stride_b, first_row, rows_total, head_chunks);
  cp_async_commit();
}

// acc[kN/8][4] = A(16 rows of tile_a) · B(kN rows of tile_b)ᵀ over the head dim: the warp's 16×kN
// block of a score-shaped product (S = Q·Kᵀ, dP = dO·Vᵀ and their transposes).
template <class Tr, class T, int kN>
__device__ __forceinline__ void gemm_rows_by_rows(float (&acc)[kN / 8][4], std::uint32_t tile_a, LaneOffset off_a,
                                                  std::uint32_t tile_b, LaneOffset off_b) {
  using Mma = MmaType<T>;
#pragma unroll
  for (int ks = 0; ks < Tr::kKSteps; ++ks) {
    std::uint32_t a[4];
    ldmatrix_x4<false>(a, tile_a + off_a.row_bytes, off_a.chunk, ks << 5, 0);
#pragma unroll
    for (int nt = 0; nt < kN / 8; nt += 2) {
      std::uint32_t b[4];
      ldmatrix_x4<false>(b, tile_b + off_b.row_bytes, off_b.chunk, ks << 5, nt * 8 * Tr::kRowBytes);
      if (ks == 0) {
        Mma::mma_first(acc[nt], a, b[0], b[1]);
        Mma::mma_first(acc[nt + 1], a, b[2], b[3]);
      } else {
        Mma::mma(acc[nt], a, b[0], b[1]);
        Mma::mma(acc[nt + 1], a, b[2], b[3]);
      }
    }
  }
}

// The two score-shaped products of one tile pair for the warp's 16 rows of x and xd:
// acc_s = x·yᵀ (S or Sᵀ) and acc_dp = xd·ydᵀ (dP or dPᵀ).
template <class Tr, class T, int kN>
__device__ __forceinline__ void scores_and_dp(float (&acc_s)[kN / 8][4], float (&acc_dp)[kN / 8][4], std::uint32_t x,
                                              std::uint32_t y, std::uint32_t xd, std::uint32_t yd, LaneOffset off_a,
                                              LaneOffset off_b) {
  gemm_rows_by_rows<Tr, T, kN>(acc_s, x, off_a, y, off_b);
  gemm_rows_by_rows<Tr, T, kN>(acc_dp, xd, off_a, yd, off_b);
}

// acc[kDTiles][4] += X · tile_b, X the warp's 16×kK block held in score-shaped accumulators (P or
// dS, packed to T as the A operand) and tile_b a [kK][kHeadDim] tile read through ldmatrix.trans,
// its columns from chunk col_chunk0 (a multiple of kOutDim / 8, even like dt: the lane's chunk is 0
// or 1, so chunk col_chunk0 + dt is one XOR of the lane's chunk offset).
template <class Tr, class T, int kK>
__device__ __forceinline__ void gemm_regs_by_tile(float (&acc)[Tr::kDTiles][4], const float (&x)[kK / 8][4],
                                                  std::uint32_t tile_b, LaneOffset off_bt, int col_chunk0) {
  using Mma = MmaType<T>;
#pragma unroll
  for (int kp = 0; kp < kK / 16; ++kp) {
    std::uint32_t a[4];
    a[0] = Mma::pack(x[2 * kp][0], x[2 * kp][1]);
    a[1] = Mma::pack(x[2 * kp][2], x[2 * kp][3]);
    a[2] = Mma::pack(x[2 * kp + 1][0], x[2 * kp + 1][1]);
    a[3] = Mma::pack(x[2 * kp + 1][2], x[2 * kp + 1][3]);
#pragma unroll
    for (int dt = 0; dt < Tr::kDTiles; dt += 2) {
      std::uint32_t b[4];
      ldmatrix_x4<true>(b, tile_b + off_bt.row_bytes, off_bt.chunk, (col_chunk0 + dt) << 4, kp * 16 * Tr::kRowBytes);
      Mma::mma(acc[dt], a, b[0], b[1]);
      Mma::mma(acc[dt + 1], a, b[2], b[3]);
    }
  }
}

// The warp's 16 rows of acc · scale into columns col0.. of dst ([rows][head_dim] with row stride
// `stride`) from row0; rows at or past rows_total and columns at or past head_dim are not written.
template <class Tr, class T>
__device__ __forceinline__ void store_rows(T* dst, std::int64_t stride, const float (&acc)[Tr::kDTiles][4], float scale,
                                           int row0, int rows_total, int col0, int head_dim, int lane) {
  using Mma = MmaType<T>;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int row = row0 + lane / 4 + half * 8;
    if (row >= rows_total) continue;
#pragma unroll
    for (int dt = 0; dt < Tr::kDTiles; ++dt) {
      if (col0 + dt * 8 >= head_dim) continue;
      const std::uint32_t packed = Mma::pack(acc[dt][half * 2] * scale, acc[dt][half * 2 + 1] * scale);
      *reinterpret_cast<std::uint32_t*>(dst + row * stride + col0 + dt * 8 + (lane % 4) * 2) = packed;
    }
  }
}

// A query row's LSE in base 2 for P = exp2(S·scale·log2 e − lse2): +inf for a row that saw no key
// (LSE −inf) and for rows past Sq, so their P is exactly 0.
__device__ __forceinline__ float lse_log2(const float* lse, std::int64_t row_base, int row, int seq_q) {
  if (row >= seq_q) return INFINITY;
  const float l = lse[row_base + row];
  return l == -INFINITY ? INFINITY : l * kLog2e;
}

template <class T>
__global__ void __launch_bounds__(256) flash_bwd_dot_do_o_kernel(FusedBackwardArgs args) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * 8 + threadIdx.x / 32;  // over B·H·Sq
  if (row >= args.fwd.batch * args.fwd.heads * args.fwd.seq_q) return;
  const std::int64_t i = row % args.fwd.seq_q, bh = row / args.fwd.seq_q;
  float sum = delta_part<T>(args, bh / args.fwd.heads, bh % args.fwd.heads, i, lane, 32);
#pragma unroll
  for (int m = 16; m >= 1; m /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, m);
  if (lane == 0) args.delta[row] = sum;
}

template <class Tr, class T>
__global__ void __launch_bounds__(Tr::kThreads) flash_bwd_dkdv_kernel(FusedBackwardArgs args) {
  static_assert(Tr::kBlockN == 16 * Tr::kWarps, "each warp owns 16 keys");
  constexpr std::uint32_t kTileK = Tr::kBlockN * Tr::kRowBytes, kTileQ = Tr::kBlockM * Tr::kRowBytes;
  constexpr std::uint32_t kOffV = kTileK, kOffQ = 2 * kTileK, kOffDo = kOffQ + kTileQ, kOffStats = kOffDo + kTileQ;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  const std::uint32_t smem = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw));
  float* lse_s = reinterpret_cast<float*>(smem_raw + kOffStats);  // [kBlockM], base 2
  float* delta_s = lse_s + Tr::kBlockM;                           // [kBlockM]

  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int n_start = static_cast<int>(blockIdx.x) * Tr::kBlockN;
  const int b = static_cast<int>(blockIdx.y) / static_cast<int>(args.fwd.kv_heads);
  const int kvh = static_cast<int>(blockIdx.y) % static_cast<int>(args.fwd.kv_heads);
  const int group = static_cast<int>(args.fwd.heads / args.fwd.kv_heads);
  const int seq_q = static_cast<int>(args.fwd.seq_q), seq_k = static_cast<int>(args.fwd.seq_k);
  const int offset = static_cast<int>(args.fwd.causal_offset);  // clamped to [-seq_q, seq_k] by the launcher
  const int head_dim = static_cast<int>(args.fwd.head_dim), head_chunks = head_dim / 8;
  const int col0 = static_cast<int>(blockIdx.z) * Tr::kOutDim;  // this CTA's slice of dK and dV

  load_tile_pair<Tr, Tr::kBlockN>(
      smem, static_cast<const T*>(args.fwd.k) + b * args.fwd.k_stride[0] + kvh * args.fwd.k_stride[1],
      args.fwd.k_stride[2], smem + kOffV,
      static_cast<const T*>(args.fwd.v) + b * args.fwd.v_stride[0] + kvh * args.fwd.v_stride[1], args.fwd.v_stride[2],
      n_start, seq_k, head_chunks);

  // Query blocks that see any key of this block: causal row i sees key n_start first at
  // i = n_start − offset; the blocks before that one are wholly masked and skipped.
  const int m_blocks = (seq_q + Tr::kBlockM - 1) / Tr::kBlockM;
  int m_first = 0;
  if (args.fwd.causal) m_first = n_start - offset >= seq_q ? m_blocks : max(0, n_start - offset) / Tr::kBlockM;

  float acc_dk[Tr::kDTiles][4], acc_dv[Tr::kDTiles][4];
#pragma unroll
  for (int dt = 0; dt < Tr::kDTiles; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc_dk[dt][e] = acc_dv[dt][e] = 0.0f;

  const float scale_log2 = args.fwd.softmax_scale * kLog2e;
  // The lane's ldmatrix offsets at k-step 0 (tile_swizzle.h).
  const LaneOffset off_a = a_operand_lane<Tr::kHeadDim>(lane, warp * 16);
  const LaneOffset off_b = b_operand_lane<Tr::kHeadDim>(lane), off_bt = bt_operand_lane<Tr::kHeadDim>(lane);
  const int warp_key0 = n_start + warp * 16;
  for (int h = kvh * group; h < (kvh + 1) * group; ++h) {
    const T* q_head = static_cast<const T*>(args.fwd.q) + b * args.fwd.q_stride[0] + h * args.fwd.q_stride[1];
    const T* do_head = static_cast<const T*>(args.dout) + b * args.do_stride[0] + h * args.do_stride[1];
    const std::int64_t stat_base = (static_cast<std::int64_t>(b) * args.fwd.heads + h) * args.fwd.seq_q;
    for (int m_block = m_first; m_block < m_blocks; ++m_block) {
      const int m_start = m_block * Tr::kBlockM;
      __syncthreads();  // every warp is done with the previous Q, dO and statistics
      load_tile_pair<Tr, Tr::kBlockM>(smem + kOffQ, q_head, args.fwd.q_stride[2], smem + kOffDo, do_head,
                                      args.do_stride[2], m_start, seq_q, head_chunks);
      if (tid < Tr::kBlockM) {
        lse_s[tid] = lse_log2(args.fwd.lse, stat_base, m_start + tid, seq_q);
        delta_s[tid] = m_start + tid < seq_q ? args.delta[stat_base + m_start + tid] : 0.0f;
      }
      cp_async_wait_all();
      __syncthreads();

      // Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ for the warp's 16 keys × kBlockM query rows.
      float acc_s[Tr::kBlockM / 8][4], acc_dp[Tr::kBlockM / 8][4];
      scores_and_dp<Tr, T, Tr::kBlockM>(acc_s, acc_dp, smem, smem + kOffQ, smem + kOffV, smem + kOffDo, off_a, off_b);

      // Pᵀ = exp2(Sᵀ·scale·log2 e − lse2) where the key is visible to the row, else 0;
      // dSᵀ = Pᵀ ⊙ (dPᵀ − Δ), written over dPᵀ. (Inline, as in the dQ kernel: through one shared
      // helper ptxas spilled 48 bytes at D 128.)
#pragma unroll
      for (int nt = 0; nt < Tr::kBlockM / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int key = warp_key0 + lane / 4 + (e / 2) * 8;
          const int col = nt * 8 + (lane % 4) * 2 + (e % 2);
          const bool visible = key < seq_k && (!args.fwd.causal || key <= m_start + col + offset);
          const float p = visible ? fast_exp2(acc_s[nt][e] * scale_log2 - lse_s[col]) : 0.0f;
          acc_s[nt][e] = p;
          acc_dp[nt][e] = p * (acc_dp[nt][e] - delta_s[col]);
        }

      // dV += Pᵀ·dO and dK += dSᵀ·Q (the scale applied at the store).
      gemm_regs_by_tile<Tr, T, Tr::kBlockM>(acc_dv, acc_s, smem + kOffDo, off_bt, col0 / 8);
      gemm_regs_by_tile<Tr, T, Tr::kBlockM>(acc_dk, acc_dp, smem + kOffQ, off_bt, col0 / 8);
    }
  }
  cp_async_wait_all();  // with no query block the K/V copies are still in flight

  store_rows<Tr, T>(static_cast<T*>(args.dk) + b * args.dk_stride[0] + kvh * args.dk_stride[1], args.dk_stride[2],
                    acc_dk, args.fwd.softmax_scale, warp_key0, seq_k, col0, head_dim, lane);
  store_rows<Tr, T>(static_cast<T*>(args.dv) + b * args.dv_stride[0] + kvh * args.dv_stride[1], args.dv_stride[2],
                    acc_dv, 1.0f, warp_key0, seq_k, col0, head_dim, lane);
}

template <class Tr, class T>
__global__ void __launch_bounds__(Tr::kThreads) flash_bwd_dq_kernel(FusedBackwardArgs args) {
  static_assert(Tr::kBlockM == 16 * Tr::kWarps, "each warp owns 16 query rows");
  constexpr std::uint32_t kTileK = Tr::kBlockN * Tr::kRowBytes, kTileQ = Tr::kBlockM * Tr::kRowBytes;
  constexpr std::uint32_t kOffDo = kTileQ, kOffK = 2 * kTileQ, kOffV = kOffK + kTileK;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  const std::uint32_t smem = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw));

  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int m_start = static_cast<int>(blockIdx.x) * Tr::kBlockM;
  const int b = static_cast<int>(blockIdx.y) / static_cast<int>(args.fwd.heads);
  const int h = static_cast<int>(blockIdx.y) % static_cast<int>(args.fwd.heads);
  const int kvh = h / static_cast<int>(args.fwd.heads / args.fwd.kv_heads);
  const int seq_q = static_cast<int>(args.fwd.seq_q), seq_k = static_cast<int>(args.fwd.seq_k);
  const int offset = static_cast<int>(args.fwd.causal_offset);
  const int head_dim = static_cast<int>(args.fwd.head_dim), head_chunks = head_dim / 8;
  const int col0 = static_cast<int>(blockIdx.z) * Tr::kOutDim;  // this CTA's slice of dQ

  load_tile_pair<Tr, Tr::kBlockM>(
      smem, static_cast<const T*>(args.fwd.q) + b * args.fwd.q_stride[0] + h * args.fwd.q_stride[1],
      args.fwd.q_stride[2], smem + kOffDo,
      static_cast<const T*>(args.dout) + b * args.do_stride[0] + h * args.do_stride[1], args.do_stride[2], m_start,
      seq_q, head_chunks);

  // This thread's two rows (lane / 4 and + 8 of the warp's 16): their LSE (base 2) and Δ.
  const int warp_row0 = m_start + warp * 16;
  const std::int64_t stat_base = (static_cast<std::int64_t>(b) * args.fwd.heads + h) * args.fwd.seq_q;
  float row_lse[2], row_delta[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int row = warp_row0 + lane / 4 + half * 8;
    row_lse[half] = lse_log2(args.fwd.lse, stat_base, row, seq_q);
    row_delta[half] = row < seq_q ? args.delta[stat_base + row] : 0.0f;
  }

  // Key blocks up to the last key the block's last row sees (none when every row is blind).
  int n_blocks = (seq_k + Tr::kBlockN - 1) / Tr::kBlockN;
  if (args.fwd.causal) {
    const int rows_end = min(m_start + Tr::kBlockM, seq_q);
    n_blocks = min(n_blocks, max(0, (rows_end + offset + Tr::kBlockN - 1) / Tr::kBlockN));
  }

  float acc_dq[Tr::kDTiles][4];
#pragma unroll
  for (int dt = 0; dt < Tr::kDTiles; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc_dq[dt][e] = 0.0f;

  const float scale_log2 = args.fwd.softmax_scale * kLog2e;
  // The lane's ldmatrix offsets at k-step 0 (tile_swizzle.h).
  const LaneOffset off_a = a_operand_lane<Tr::kHeadDim>(lane, warp * 16);
  const LaneOffset off_b = b_operand_lane<Tr::kHeadDim>(lane), off_bt = bt_operand_lane<Tr::kHeadDim>(lane);
  const T* k_head = static_cast<const T*>(args.fwd.k) + b * args.fwd.k_stride[0] + kvh * args.fwd.k_stride[1];
  const T* v_head = static_cast<const T*>(args.fwd.v) + b * args.fwd.v_stride[0] + kvh * args.fwd.v_stride[1];
  for (int n_block = 0; n_block < n_blocks; ++n_block) {
    const int n_start = n_block * Tr::kBlockN;
    __syncthreads();  // every warp is done with the previous K and V
    load_tile_pair<Tr, Tr::kBlockN>(smem + kOffK, k_head, args.fwd.k_stride[2], smem + kOffV, v_head,
                                    args.fwd.v_stride[2], n_start, seq_k, head_chunks);
    cp_async_wait_all();
    __syncthreads();

    // S = Q·Kᵀ and dP = dO·Vᵀ for the warp's 16 rows × kBlockN keys.
    float acc_s[Tr::kBlockN / 8][4], acc_dp[Tr::kBlockN / 8][4];
    scores_and_dp<Tr, T, Tr::kBlockN>(acc_s, acc_dp, smem, smem + kOffK, smem + kOffDo, smem + kOffV, off_a, off_b);

    // dS = P ⊙ (dP − Δ), P = exp2(S·scale·log2 e − lse2) where the key is visible, else 0.
#pragma unroll
    for (int nt = 0; nt < Tr::kBlockN / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int half = e / 2;
        const int row = warp_row0 + lane / 4 + half * 8;
        const int key = n_start + nt * 8 + (lane % 4) * 2 + (e % 2);
        const bool visible = key < seq_k && (!args.fwd.causal || key <= row + offset);
        const float p = visible ? fast_exp2(acc_s[nt][e] * scale_log2 - row_lse[half]) : 0.0f;
        acc_dp[nt][e] = p * (acc_dp[nt][e] - row_delta[half]);
      }

    // dQ += dS·K (the scale applied at the store).
    gemm_regs_by_tile<Tr, T, Tr::kBlockN>(acc_dq, acc_dp, smem + kOffK, off_bt, col0 / 8);
  }
  cp_async_wait_all();  // with no key block the Q/dO copies are still in flight

  store_rows<Tr, T>(static_cast<T*>(args.dq) + b * args.dq_stride[0] + h * args.dq_stride[1], args.dq_stride[2], acc_dq,
                    args.fwd.softmax_scale, warp_row0, seq_q, col0, head_dim, lane);
}

}  // namespace attnprof::cuda::attention_backward
