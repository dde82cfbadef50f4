// `flash` on sm_90a: a FlashAttention-3-shaped forward in plain CUDA + inline PTX (no CUTLASS).
//
// Tiling: one CTA = 128 query rows of one (batch, head) and 384 threads in three warpgroups.
//   - Warpgroup 0 is the producer: after `setmaxnreg.dec` to 24 registers one thread issues every
//     TMA load (Q once, then K and V tiles of 128 keys into a 2-stage ring, each stage with a
//     full and an empty mbarrier for K and for V); its other 127 threads exit.
//   - Warpgroups 1 and 2 are consumers (`setmaxnreg.inc` to 240), 64 query rows each. Per K/V tile:
//     S = Q·Kᵀ by D/16 wgmma m64n128k16 (both operands in shared memory, 128-byte swizzle); mask
//     (only on tiles that cross the causal diagonal or the Sk tail); online softmax in base 2 on the
//     accumulator registers; P packed to bf16/fp16 in registers, which is exactly the A fragment of
//     O += P·V by 8 wgmma m64n{D}k16 in the RS form, with V read MN-major (tnspB) from shared memory.
//   - Key tiles are visited last to first, so the masked ones come first; tiles wholly above the
//     diagonal are never loaded. The grid is (B·H, query blocks) with the longest query blocks first.
//   - Epilogue: O / row sum written through the warpgroup's own Q rows in shared memory, then
//     16-byte coalesced stores; fp32 LSE straight from registers.
// Shared memory: Q 128·D·2 + 2 stages × (K + V) 128·D·2 = 80 KiB (D 64), 160 KiB (D 128), + 1 KiB
// alignment + barriers: 1 CTA per SM. Registers: ptxas reports the entry allocation, 168 per
// thread (65536 / 384 rounded down to 8) × 384 threads; setmaxnreg then moves them between roles
// (24 × 128 + 240 × 256 = 64512 ≤ 168 × 384) without changing the CTA's total, so the occupancy
// arithmetic on the reported footprint (168 registers, 384 threads → 1 CTA/SM) stays right.
// FLOPs: 4·B·H·Sq·Sk·D (about halved for causal). Bytes: 2·(2·B·H·Sq·D + 2·B·Hkv·Sk·D), plus K/V
// re-read from L2 by every query block.
//
// Versions:
//   v1 (this) producer warp + 2 consumer warpgroups, 128×128 tiles, 2 stages, each GEMM waited
//      before the next (no intra-warpgroup overlap, no pingpong), non-persistent grid: not yet
//      measured (compiled only; ptxas numbers in docs/cuda.md).
#include "cuda/hopper/flash_hopper.h"

#include <attnprof/error.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "cuda/check.h"
#include "cuda/hopper/probes.h"
#include "cuda/hopper/swizzle.h"
#include "cuda/hopper/tma.cuh"
#include "cuda/hopper/tma.h"
#include "cuda/hopper/wgmma.cuh"
#include "cuda/hopper/wgmma_instructions.cuh"
#include "cuda/hopper/wgmma_layout.h"
#include "cuda/str_cat.h"

namespace attnprof::cuda::hopper {
namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr int kWarpgroupThreads = 128;

struct PipelineBarriers {
  std::uint64_t q_full;
  std::uint64_t k_full[2], k_empty[2];
  std::uint64_t v_full[2], v_empty[2];
};

template <int kHeadDim_>
struct FlashSm90Traits {
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBlockM = 128;  // query rows per CTA
  static constexpr int kBlockN = 128;  // keys per K/V tile
  static constexpr int kConsumerWarpgroups = kBlockM / 64;
  static constexpr int kConsumerWarps = 4 * kConsumerWarpgroups;
  static constexpr int kThreads = kWarpgroupThreads * (1 + kConsumerWarpgroups);
  static constexpr int kStages = 2;
  static constexpr int kAtoms = kHeadDim / 64;  // 64-column (128-byte) swizzle atoms per row
  static constexpr int kQAtomBytes = kBlockM * 128;
  static constexpr int kKVAtomBytes = kBlockN * 128;
  static constexpr int kQBytes = kAtoms * kQAtomBytes;
  static constexpr int kKVBytes = kAtoms * kKVAtomBytes;  // one K (or V) tile: its expect_tx count
  static constexpr int kSAccumulators = kBlockN / 2;     // m64n128 fp32 per thread
  static constexpr int kOAccumulators = kHeadDim / 2;    // m64n{D}
  static constexpr int kPSteps = kBlockN / 16;           // k16 steps of P·V
  static constexpr int kQKSteps = kHeadDim / 16;         // k16 steps of Q·Kᵀ
  static constexpr int kProducerRegisters = 24;
  static constexpr int kConsumerRegisters = 240;
  static constexpr int kKOffset = kQBytes;
  static constexpr int kVOffset = kKOffset + kStages * kKVBytes;
  static constexpr int kBarrierOffset = kVOffset + kStages * kKVBytes;
  static constexpr int kSmemBytes = 1024 /* alignment slack */ + kBarrierOffset + static_cast<int>(sizeof(PipelineBarriers));
  static constexpr int kEntryRegisters = (65536 / kThreads) / 8 * 8;
  static_assert(kHeadDim % 64 == 0, "whole swizzle atoms");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per CTA on sm_90");
  static_assert(kProducerRegisters * kWarpgroupThreads + kConsumerRegisters * kWarpgroupThreads * kConsumerWarpgroups <=
                    kEntryRegisters * kThreads,
                "setmaxnreg can only redistribute the registers the CTA was launched with");
};

struct FlashSm90Params {
  void* o = nullptr;
  std::int64_t o_stride[3]{};  // batch, head, seq (elements)
  float* lse = nullptr;
  int heads = 0, kv_group = 1, seq_q = 0, seq_k = 0;
  int causal = 0, causal_offset = 0;
  float softmax_scale = 1.0f, scale_log2 = 1.0f;
  bool q_seq_inner = true, k_seq_inner = true, v_seq_inner = true;
};

// Number of key tiles the CTA starting at query row m0 must visit (tiles 0 .. n-1): causal rows see
// keys j <= i + causal_offset, so the CTA's last row bounds them; 0 when no row sees any key.
template <class Tr>
__host__ __device__ __forceinline__ int visible_key_tiles(const FlashSm90Params& p, int m0) {
  int keys = p.seq_k;
  if (p.causal) {
    const long long last_visible = static_cast<long long>(m0) + Tr::kBlockM - 1 + p.causal_offset;
    keys = last_visible < 0 ? 0 : static_cast<int>(last_visible + 1 < keys ? last_visible + 1 : keys);
  }
  return (keys + Tr::kBlockN - 1) / Tr::kBlockN;
}

#if ATTNPROF_SM90A
template <int kRegisters>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}
template <int kRegisters>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}
// Named barrier among `threads` threads (a multiple of 32); id 0 is __syncthreads'.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

template <class T>
__device__ __forceinline__ std::uint32_t pack_pair(float lo, float hi) {
  if constexpr (std::is_same_v<T, __half>) {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<std::uint32_t*>(&v);
  } else {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<std::uint32_t*>(&v);
  }
}

// One thread: Q once, then K and V of tiles n_tiles-1 .. 0 into the 2-stage ring. A stage is
// refilled only after all 8 consumer warps released it (empty barrier; the first round passes
// because a fresh barrier counts as having completed the phase before phase 0).
template <class Tr>
__device__ __forceinline__ void produce(const CUtensorMap& q_map, const CUtensorMap& k_map, const CUtensorMap& v_map,
                                        const FlashSm90Params& p, unsigned char* smem, PipelineBarriers& bars, int b,
                                        int h, int kv_h, int m0, int n_tiles) {
  tma_prefetch_map(q_map);
  tma_prefetch_map(k_map);
  tma_prefetch_map(v_map);
  mbarrier_arrive_expect_tx(&bars.q_full, Tr::kQBytes);
#pragma unroll
  for (int atom = 0; atom < Tr::kAtoms; ++atom)
    tma_load_attention_box(smem + atom * Tr::kQAtomBytes, q_map, p.q_seq_inner, &bars.q_full, atom * 64, m0, h, b,
                           kCacheEvictFirst);
  for (int it = 0; it < n_tiles; ++it) {
    const int stage = it % Tr::kStages;
    const std::uint32_t phase = (it / Tr::kStages) & 1;
    const int key0 = (n_tiles - 1 - it) * Tr::kBlockN;
    unsigned char* k_tile = smem + Tr::kKOffset + stage * Tr::kKVBytes;
    unsigned char* v_tile = smem + Tr::kVOffset + stage * Tr::kKVBytes;
    mbarrier_wait_parity(&bars.k_empty[stage], phase ^ 1);
    mbarrier_arrive_expect_tx(&bars.k_full[stage], Tr::kKVBytes);
#pragma unroll
    for (int atom = 0; atom < Tr::kAtoms; ++atom)
      tma_load_attention_box(k_tile + atom * Tr::kKVAtomBytes, k_map, p.k_seq_inner, &bars.k_full[stage], atom * 64,
                             key0, kv_h, b, kCacheEvictLast);
    mbarrier_wait_parity(&bars.v_empty[stage], phase ^ 1);
    mbarrier_arrive_expect_tx(&bars.v_full[stage], Tr::kKVBytes);
#pragma unroll
    for (int atom = 0; atom < Tr::kAtoms; ++atom)
      tma_load_attention_box(v_tile + atom * Tr::kKVAtomBytes, v_map, p.v_seq_inner, &bars.v_full[stage], atom * 64,
                             key0, kv_h, b, kCacheEvictLast);
  }
}

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

// Online softmax of one tile: new running max per row (the 4 lanes of a quad share a row), O and
// the running sum rescaled, S replaced by P = exp2(S·c − max·c), c = softmax_scale·log2 e.
template <class Tr>
__device__ __forceinline__ void online_softmax(float (&s)[Tr::kSAccumulators], float (&o)[Tr::kOAccumulators],
                                               float (&row_max)[2], float (&row_sum)[2], float scale_log2) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    float mx = row_max[i];
#pragma unroll
    for (int j = 0; j < Tr::kBlockN / 8; ++j) mx = fmaxf(mx, fmaxf(s[4 * j + 2 * i], s[4 * j + 2 * i + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    // A row that has seen no visible key keeps max -inf: use 0 so exp2 gives 0, not NaN.
    const float max_scaled = mx == -INFINITY ? 0.0f : mx * scale_log2;
    const float rescale = fast_exp2(row_max[i] * scale_log2 - max_scaled);
    row_max[i] = mx;
    row_sum[i] *= rescale;
#pragma unroll
    for (int j = 0; j < Tr::kHeadDim / 8; ++j) {
      o[4 * j + 2 * i] *= rescale;
      o[4 * j + 2 * i + 1] *= rescale;
    }
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < Tr::kBlockN / 8; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float prob = fast_exp2(s[4 * j + 2 * i + e] * scale_log2 - max_scaled);
        s[4 * j + 2 * i + e] = prob;
        sum += prob;
      }
    row_sum[i] += sum;  // this thread's columns; the quad is summed in the epilogue
  }
}

template <class Tr, class T>
__device__ __forceinline__ void pv_wgmma(float (&o)[Tr::kOAccumulators], const std::uint32_t (&a)[4],
                                         std::uint64_t v_desc) {
  if constexpr (Tr::kHeadDim == 64)
    wgmma_rs_m64n64k16_tb<T>(o, a, v_desc);
  else
    wgmma_rs_m64n128k16_tb<T>(o, a, v_desc);
}

// One consumer warpgroup: 64 query rows from m0 + 64·consumer.
template <class Tr, class T>
__device__ __forceinline__ void consume(const FlashSm90Params& p, unsigned char* smem, PipelineBarriers& bars, int b,
                                        int h, int m0, int n_tiles) {
  const int consumer = static_cast<int>(threadIdx.x) / kWarpgroupThreads - 1;
  const int t = static_cast<int>(threadIdx.x) % kWarpgroupThreads;
  const int warp = t / 32, lane = t % 32;
  const int wg_row0 = m0 + 64 * consumer;  // first query row of this warpgroup
  const int warp_row0 = wg_row0 + 16 * warp;
  const std::uint32_t q_base = shared_address(smem) + consumer * 64 * 128;  // its 64 rows of each Q atom
  const std::uint32_t k_base = shared_address(smem + Tr::kKOffset);
  const std::uint32_t v_base = shared_address(smem + Tr::kVOffset);

  float o[Tr::kOAccumulators], s[Tr::kSAccumulators];
#pragma unroll
  for (int v = 0; v < Tr::kOAccumulators; ++v) o[v] = 0.0f;
#pragma unroll
  for (int v = 0; v < Tr::kSAccumulators; ++v) s[v] = 0.0f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.0f, 0.0f};
  std::uint32_t p_frag[Tr::kPSteps][4];

  if (n_tiles > 0) mbarrier_wait_parity(&bars.q_full, 0);
  for (int it = 0; it < n_tiles; ++it) {
    const int stage = it % Tr::kStages;
    const std::uint32_t phase = (it / Tr::kStages) & 1;
    const int key0 = (n_tiles - 1 - it) * Tr::kBlockN;

    // S = Q·Kᵀ (scale-d 0 on the first k-step drops the previous tile's P).
    mbarrier_wait_parity(&bars.k_full[stage], phase);
    wgmma_fence(s);
#pragma unroll
    for (int ks = 0; ks < Tr::kQKSteps; ++ks) {
      const std::uint32_t k_step = (ks % 4) * 32u;  // +32 B per k16 step inside an atom
      wgmma_ss_m64n128k16<T>(s, sw128_kmajor_descriptor(q_base + (ks / 4) * Tr::kQAtomBytes + k_step),
                             sw128_kmajor_descriptor(k_base + stage * Tr::kKVBytes + (ks / 4) * Tr::kKVAtomBytes + k_step),
                             ks > 0);
    }
    wgmma_commit_group();
    wgmma_wait_group<0>(s);
    if (lane == 0) mbarrier_arrive(&bars.k_empty[stage]);  // this warp no longer reads K[stage]

    const bool crosses_diagonal = p.causal && key0 + Tr::kBlockN - 1 > wg_row0 + p.causal_offset;
    if (key0 + Tr::kBlockN > p.seq_k || crosses_diagonal) mask_scores<Tr>(s, p, warp_row0, key0, lane);
    online_softmax<Tr>(s, o, row_max, row_sum, p.scale_log2);
#pragma unroll
    for (int step = 0; step < Tr::kPSteps; ++step)
#pragma unroll
      for (int r = 0; r < 4; ++r)
        p_frag[step][r] = pack_pair<T>(s[rs_a_source_accumulator(step, r, 0)], s[rs_a_source_accumulator(step, r, 1)]);

    // O += P·V.
    mbarrier_wait_parity(&bars.v_full[stage], phase);
    wgmma_fence(o);  // after the rescale (ordinary writes to o)
#pragma unroll
    for (int step = 0; step < Tr::kPSteps; ++step)
      pv_wgmma<Tr, T>(o, p_frag[step],
                      sw128_mnmajor_descriptor(v_base + stage * Tr::kKVBytes + step * 16 * 128, Tr::kKVAtomBytes));
    wgmma_commit_group();
    wgmma_wait_group<0>(o);
#pragma unroll
    for (int step = 0; step < Tr::kPSteps; ++step) pin_registers(p_frag[step]);
    if (lane == 0) mbarrier_arrive(&bars.v_empty[stage]);
  }

  // Epilogue. Every warp of this warpgroup must be past its last wgmma reading Q before its rows of
  // the Q tile are overwritten with O.
  named_barrier_sync(1 + consumer, kWarpgroupThreads);
  T* out = static_cast<T*>(p.o) + b * p.o_stride[0] + h * p.o_stride[1];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    float sum = row_sum[i];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;  // a row that sees no key comes out as zeros
    const int row = warp_row0 + lane / 4 + 8 * i;
    if (p.lse != nullptr && lane % 4 == 0 && row < p.seq_q)
      p.lse[(static_cast<std::int64_t>(b) * p.heads + h) * p.seq_q + row] =
          sum > 0.0f ? row_max[i] * p.softmax_scale + logf(sum) : -INFINITY;
    const int tile_row = row - m0;
#pragma unroll
    for (int j = 0; j < Tr::kHeadDim / 8; ++j) {
      const std::uint32_t addr = shared_address(smem) + (j / 8) * Tr::kQAtomBytes +
                                 swizzle128_chunk_offset(tile_row, j % 8) + 4 * (lane % 4);
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(pack_pair<T>(o[4 * j + 2 * i] * inv, o[4 * j + 2 * i + 1] * inv))
                   : "memory");
    }
  }
  named_barrier_sync(1 + consumer, kWarpgroupThreads);
  constexpr int kChunksPerRow = Tr::kHeadDim / 8;
  for (int c = t; c < 64 * kChunksPerRow; c += kWarpgroupThreads) {
    const int local_row = c / kChunksPerRow, chunk = c % kChunksPerRow;
    const int row = wg_row0 + local_row;
    if (row >= p.seq_q) continue;
    uint4 value;
    const std::uint32_t addr = shared_address(smem) + (chunk / 8) * Tr::kQAtomBytes +
                               swizzle128_chunk_offset(64 * consumer + local_row, chunk % 8);
    asm volatile("ld.shared.v4.b32 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(value.x), "=r"(value.y), "=r"(value.z), "=r"(value.w)
                 : "r"(addr)
                 : "memory");
    *reinterpret_cast<uint4*>(out + row * p.o_stride[2] + chunk * 8) = value;
  }
}
#endif  // ATTNPROF_SM90A

template <class Tr, class T>
__global__ void __launch_bounds__(Tr::kThreads, 1)
    flash_forward_sm90_kernel(const __grid_constant__ CUtensorMap q_map, const __grid_constant__ CUtensorMap k_map,
                              const __grid_constant__ CUtensorMap v_map, const FlashSm90Params p) {
#if ATTNPROF_SM90A
  extern __shared__ unsigned char smem_raw[];
  // Swizzle atoms must start on 1024-byte boundaries (swizzle.h); the launch adds 1 KiB of slack.
  unsigned char* smem = smem_raw + (1024u - shared_address(smem_raw) % 1024u) % 1024u;
  PipelineBarriers& bars = *reinterpret_cast<PipelineBarriers*>(smem + Tr::kBarrierOffset);

  const int m_block = static_cast<int>(gridDim.y - 1 - blockIdx.y);  // longest first under causal
  const int bh = static_cast<int>(blockIdx.x);
  const int b = bh / p.heads, h = bh % p.heads;
  const int m0 = m_block * Tr::kBlockM;
  const int n_tiles = visible_key_tiles<Tr>(p, m0);

  if (threadIdx.x == 0) {
    mbarrier_init(&bars.q_full, 1);
    for (int stage = 0; stage < Tr::kStages; ++stage) {
      mbarrier_init(&bars.k_full[stage], 1);
      mbarrier_init(&bars.v_full[stage], 1);
      mbarrier_init(&bars.k_empty[stage], Tr::kConsumerWarps);
      mbarrier_init(&bars.v_empty[stage], Tr::kConsumerWarps);
    }
    fence_mbarrier_init();
  }
  __syncthreads();

  // Each role is one branch (setmaxnreg applies per warpgroup and needs every warp of it).
  if (threadIdx.x < kWarpgroupThreads) {
    setmaxnreg_dec<Tr::kProducerRegisters>();
    if (threadIdx.x == 0 && n_tiles > 0) produce<Tr>(q_map, k_map, v_map, p, smem, bars, b, h, h / p.kv_group, m0, n_tiles);
  } else {
    setmaxnreg_inc<Tr::kConsumerRegisters>();
    consume<Tr, T>(p, smem, bars, b, h, m0, n_tiles);
  }
#else
  (void)q_map, (void)k_map, (void)v_map, (void)p;
  __trap();
#endif
}

template <class Tr, class T>
void launch_typed(const FusedAttentionArgs& a, cudaStream_t stream) {
  const CUtensorMapDataType element = std::is_same_v<T, __half> ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                                : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  const auto b = static_cast<std::uint64_t>(a.batch), d = static_cast<std::uint64_t>(a.head_dim);
  const AttentionTileMap q = make_attention_tile_map(a.q, element, b, static_cast<std::uint64_t>(a.heads),
                                                     static_cast<std::uint64_t>(a.seq_q), d, a.q_stride[0],
                                                     a.q_stride[1], a.q_stride[2], Tr::kBlockM);
  const AttentionTileMap k = make_attention_tile_map(a.k, element, b, static_cast<std::uint64_t>(a.kv_heads),
                                                     static_cast<std::uint64_t>(a.seq_k), d, a.k_stride[0],
                                                     a.k_stride[1], a.k_stride[2], Tr::kBlockN);
  const AttentionTileMap v = make_attention_tile_map(a.v, element, b, static_cast<std::uint64_t>(a.kv_heads),
                                                     static_cast<std::uint64_t>(a.seq_k), d, a.v_stride[0],
                                                     a.v_stride[1], a.v_stride[2], Tr::kBlockN);
  FlashSm90Params p;
  p.o = a.o;
  for (int i = 0; i < 3; ++i) p.o_stride[i] = a.o_stride[i];
  p.lse = a.lse;
  p.heads = static_cast<int>(a.heads);
  p.kv_group = static_cast<int>(a.heads / a.kv_heads);
  p.seq_q = static_cast<int>(a.seq_q);
  p.seq_k = static_cast<int>(a.seq_k);
  p.causal = a.causal ? 1 : 0;
  p.causal_offset = static_cast<int>(a.causal ? a.causal_offset : 0);
  p.softmax_scale = a.softmax_scale;
  p.scale_log2 = a.softmax_scale * kLog2e;
  p.q_seq_inner = q.seq_inner;
  p.k_seq_inner = k.seq_inner;
  p.v_seq_inner = v.seq_inner;

  auto kernel = flash_forward_sm90_kernel<Tr, T>;
  ATTNPROF_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Tr::kSmemBytes));
  const dim3 grid(static_cast<unsigned>(a.batch * a.heads), static_cast<unsigned>((a.seq_q + Tr::kBlockM - 1) / Tr::kBlockM));
  kernel<<<grid, Tr::kThreads, Tr::kSmemBytes, stream>>>(q.map, k.map, v.map, p);
  ATTNPROF_CUDA_CHECK_LAUNCH("flash_forward_sm90_kernel");
}

}  // namespace

FlashKernel flash_kernel_choice() {
  const char* kernel = std::getenv("ATTNPROF_FLASH_KERNEL");
  const std::string want = kernel == nullptr ? "" : kernel;
  if (!want.empty() && want != "sm80" && want != "sm90")
    throw UsageError(str_cat("ATTNPROF_FLASH_KERNEL=", want,
                             ": allowed sm80 (the mma.sync kernel), sm90 (wgmma + TMA, compute capability 9.0), or unset"));
  if (want == "sm80") return FlashKernel::sm80;
  if (want.empty()) {
    const char* config = std::getenv("ATTNPROF_FLASH_CONFIG");  // a tiling of the sm80 kernel
    if (config != nullptr && std::atoi(config) != 0) return FlashKernel::sm80;
  }
  const auto why = hopper_unavailable_reason();
  if (want == "sm90" && why) throw UsageError(str_cat("ATTNPROF_FLASH_KERNEL=sm90: ", *why));
  return why ? FlashKernel::sm80 : FlashKernel::sm90;
}

void launch_flash_attention_sm90(const FusedAttentionArgs& args, cudaStream_t stream) {
  if (args.dtype != DType::bf16 && args.dtype != DType::fp16)
    throw UsageError(str_cat("--dtype ", dtype_name(args.dtype), ": the fused GPU kernels take bf16 or fp16"));
  if (args.head_dim != 64 && args.head_dim != 128)
    throw UsageError(str_cat("--head-dim ", args.head_dim, ": the fused GPU kernels take 64 or 128"));
  if (auto why = hopper_unavailable_reason()) throw Error(str_cat("flash_forward_sm90: ", *why));
  if (args.batch * args.heads > 0x7fffffffll || (args.seq_q + 127) / 128 > 65535 || args.seq_k > (1ll << 30) ||
      args.causal_offset > (1ll << 30) || args.causal_offset < -(1ll << 30))
    throw Error("flash_forward_sm90: the problem exceeds the kernel's grid");
  const bool fp16 = args.dtype == DType::fp16;
  if (args.head_dim == 64) {
    fp16 ? launch_typed<FlashSm90Traits<64>, __half>(args, stream)
         : launch_typed<FlashSm90Traits<64>, __nv_bfloat16>(args, stream);
  } else {
    fp16 ? launch_typed<FlashSm90Traits<128>, __half>(args, stream)
         : launch_typed<FlashSm90Traits<128>, __nv_bfloat16>(args, stream);
  }
}

}  // namespace attnprof::cuda::hopper
