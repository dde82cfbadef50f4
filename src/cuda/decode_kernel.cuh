#pragma once
// The split-KV ("flash-decoding") forward for few query rows against a long KV cache: the kernel
// behind launch_decode_attention (decode_forward.h), chosen by plan_decode (decode_plan.h).
//
// Rows: the query heads of one kv head × seq_q, packed (row p = head-in-group · seq_q + query
// row) into the 16 M rows of one mma.sync m16n8k16 tile (a CTA per 16 packed rows; rows past the
// packed count are zero-filled and never stored), so one read of a kv head's K and V serves its
// whole GQA group: at seq_q 1 with 4 query heads per kv head, 4 rows of 16.
// flash_decode_splitkv_kernel<D, T, G>: G, a DecodeGeometry, fixes the warps per CTA, the stages per
// warp, the KiB of K and V per warp tile and the CTAs per SM (production: decode_plan.h's
// kDecodeGeometry128 / 64, both 4 warps, 3 stages of 8 KiB, 2 CTAs per SM, and for grids of one wave
// at D 128 kDecodeGeometry128OneCta, 8 warps at one CTA per SM). One CTA per (batch, kv head, row
// block) × split (grid x, y), or with G::kPersistent a grid of SMs × CTAs per SM looping over those
// items (x fastest). The split's keys, whole 128-key multiples but the last, are dealt to the
// warps in warp tiles (16 keys at D 128 and 8 KiB); each warp streams its own tiles through its
// own cp.async pipeline (16-byte copies, XOR-swizzled rows for conflict-free ldmatrix), with no
// CTA barrier in the key loop: stages − 1 tiles of each warp in flight while it computes one
// (production: 64 KiB per CTA at 2 CTAs per SM, or 128 KiB at one CTA per SM). Per tile: S = Q·Kᵀ (Q's A fragments held in
// registers), a mask only on tiles reaching past the split's end or a row's causal limit, an
// online softmax in base 2 (rescaled every tile: the arithmetic is far below the memory time),
// O += P·V with P repacked in registers. The warps' (max, sum, O) are merged through shared
// memory; with one split the CTA writes O (and the LSE) itself. With G::clusters(splits) (2 to
// kDecodeMaxClusterSplits splits on a geometry built for it) an item's splits are one thread
// block cluster: each CTA but the first stores its O normalised and natural-log LSE into its own
// shared memory, and after a cluster barrier the first reads the others' (distributed shared
// memory), merges them in split order, as below, and writes O (and the LSE): no workspace, no
// counter. Else each CTA writes O normalised and its natural-log LSE, fp32, to the workspace
// ([B·H·Sq rows][splits][D] and [B·H·Sq rows][splits]), fences, and counts itself in its (batch,
// kv head, row block)'s arrival counter; the CTA that
// arrives last resets the counter to 0 and merges every split of its rows by their LSE, in split
// order (whichever CTA arrives last, the same sums in the same order: bit-identical run to run),
// lse = log Σ exp(lse_i), O = Σ exp(lse_i − lse) O_i, in one pass with a running maximum (8
// splits' loads in flight at a time), and writes O (and the LSE). No combine kernel.
// A row that sees no key (a causal offset below 0) comes out as zeros with LSE −inf; a split
// holding no key of a row gives that row a −inf partial LSE and weight 0.
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/attention_kernel.cuh"
#include "cuda/decode_forward.h"
#include "cuda/decode_plan.h"
#include "cuda/device_types.cuh"
#include "cuda/fused_attention.h"

namespace attnprof::cuda::decode {

// The split kernel's geometry (decode_plan.h's DecodeGeometrySpec as template arguments), and
// L2Prefetch: 0, or 128 / 256 for K/V copies with cp.async's .L2::128B / .L2::256B prefetch hint
// (the L2 fetches that many bytes around each copy's 16).
template <int Warps, int Stages, int TileKiB, int CtasPerSm, bool Persistent = false, int L2Prefetch = 0,
          bool ClusterMerge = false>
struct DecodeGeometry {
  static constexpr int kWarps = Warps;
  static constexpr int kStages = Stages;
  static constexpr int kTileKiB = TileKiB;  // K and V of one warp tile
  static constexpr int kCtasPerSm = CtasPerSm;
  static constexpr bool kPersistent = Persistent;
  static constexpr int kL2Prefetch = L2Prefetch;
  static constexpr bool kClusterMerge = ClusterMerge;
  static_assert(!(Persistent && ClusterMerge), "a persistent CTA's items are not clusters");
  // Whether a launch of `splits` splits runs each item's splits as one cluster.
  __host__ __device__ static constexpr bool clusters(int splits) {
    return decode_merges_in_clusters(ClusterMerge, splits);
  }
  static_assert(L2Prefetch == 0 || L2Prefetch == 128 || L2Prefetch == 256, "cp.async's L2 prefetch sizes");
};
// A DecodeGeometrySpec constant as its DecodeGeometry; the head dim's two-CTA production geometry
// (decode_plan.h's decode_geometry; plan_decode may take kDecodeGeometry128OneCta instead).
template <const DecodeGeometrySpec& Spec>
using GeometryOf = DecodeGeometry<Spec.warps, Spec.stages, Spec.tile_kib, Spec.ctas_per_sm, Spec.persistent,
                                  Spec.l2_prefetch, Spec.cluster_merge>;
template <int D>
using ProductionGeometry = GeometryOf<D <= 64 ? kDecodeGeometry64 : kDecodeGeometry128>;

template <int kHeadDim_, class G>
struct DecodeTraits {
  static constexpr int kHeadDim = kHeadDim_;  // attention::swizzle reads it
  static constexpr int kWarps = G::kWarps;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kRows = static_cast<int>(kDecodeRowsPerCta);
  static constexpr int kWarpKeys = G::kTileKiB * 1024 / (4 * kHeadDim);  // keys of a warp tile's K and V
  static constexpr int kStages = G::kStages;
  static constexpr int kChunks = kHeadDim / 8;  // 16-byte chunks per row
  static constexpr bool kSwizzle8 = true;       // attention::swizzle's 8-chunk XOR (8 or 16 chunks a row)
  static constexpr int kRowBytes = kHeadDim * 2;
  static constexpr int kKTiles = kWarpKeys / 8;   // n-tiles of S
  static constexpr int kDTiles = kHeadDim / 8;    // n-tiles of O
  static constexpr int kKSteps = kHeadDim / 16;   // k-steps of Q·Kᵀ
  static constexpr int kPSteps = kWarpKeys / 16;  // k-steps of P·V
  static constexpr int kTileBytes = kWarpKeys * kRowBytes;  // K (or V) of one warp tile
  static constexpr int kStageBytes = 2 * kTileBytes;
  static constexpr int kCopyRows = 32 / kChunks;  // rows a warp's 32 lanes copy per pass
  // Shared memory: Q (16 rows), then each warp's kStages stages of K and V. After the key loop the
  // stages hold the merge: each warp's O (rows padded by 8 floats against bank conflicts), then its
  // scaled row maxima and its row sums.
  static constexpr int kOffStages = kRows * kRowBytes;
  static constexpr int kSmemBytes = kOffStages + kWarps * kStages * kStageBytes;
  static constexpr int kMergeStride = kHeadDim + 8;
  static constexpr int kOffMergeMax = kOffStages + kWarps * kRows * kMergeStride * 4;
  static constexpr int kOffMergeSum = kOffMergeMax + kWarps * kRows * 4;
  static constexpr int kMergeCols = kHeadDim / (kThreads / kRows);  // O columns a thread merges
  static_assert(kHeadDim == 64 || kHeadDim == 128, "plan_decode runs head dims 64 and 128");
  static_assert(kWarpKeys * 4 * kHeadDim == G::kTileKiB * 1024 && kWarpKeys % 16 == 0, "whole 16-key MMA steps a tile");
  static_assert(kChunks % 8 == 0, "the 8-chunk swizzle permutes whole groups of 8 chunks");
  static_assert(kDecodeSplitAlign % (kWarps * kWarpKeys) == 0, "a split is whole warp tiles of every warp");
  static_assert(kWarpKeys % kCopyRows == 0 && kKTiles % 2 == 0 && kDTiles % 2 == 0, "tile geometry");
  static_assert(kOffMergeSum + kWarps * kRows * 4 <= kSmemBytes, "the merge fits in the stages");
  static_assert(kMergeCols % 8 == 0, "16-byte output stores");
  // With G::kClusterMerge: a CTA's normalised O rows and LSEs for its cluster's first CTA, past
  // the warps' merge.
  static constexpr int kOffClusterSlot = kOffMergeSum + kWarps * kRows * 4;
  static_assert(!G::kClusterMerge || kOffClusterSlot + kRows * (kHeadDim + 1) * 4 <= kSmemBytes,
                "a CTA's partial rows fit in its stages past the warps' merge");
  static_assert(kOffClusterSlot % 16 == 0, "16-byte stores");
  static_assert(kStages >= 2, "a tile in flight while one is computed");
  // 1 KiB of shared memory per CTA is the system's (Hopper: 228 KiB an SM, 227 a CTA at most).
  static_assert(kSmemBytes <= 227 * 1024 && (kSmemBytes + 1024) * G::kCtasPerSm <= 228 * 1024,
                "the CTAs per SM the geometry is built for fit in shared memory");
};

template <int N>
__device__ __forceinline__ void cp_async_wait_group() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

constexpr float kLn2 = 0.6931471805599453f;

// attention::cp_async_16 with the geometry's L2 prefetch hint.
template <int L2Prefetch>
__device__ __forceinline__ void cp_async_kv(std::uint32_t smem_addr, const void* gmem, bool valid) {
  const int src_bytes = valid ? 16 : 0;  // 0: fill the 16 bytes with zeros, read nothing
  if constexpr (L2Prefetch == 256)
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;\n" ::"r"(smem_addr), "l"(gmem), "r"(src_bytes));
  else if constexpr (L2Prefetch == 128)
    asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(smem_addr), "l"(gmem), "r"(src_bytes));
  else
    attention::cp_async_16(smem_addr, gmem, valid);
}

// A row's splits merged by their LSEs, in split order, one at a time: with m the running maximum of
// the LSEs so far, O = Σ exp(lse_s − m) O_s / Σ exp(lse_s − m) and lse = m + log Σ exp(lse_s − m),
// rescaled whenever m grows. While every LSE so far is −inf (no key of the row in those splits) the
// base is 0, which keeps exp from NaN: both weights are 0 and the sums stay 0, so a row that sees no
// key comes out as zeros with LSE −inf. Used by the cluster merge and the workspace merge alike.
struct SplitMerge {
  float top = -INFINITY, sum = 0.0f;
  // Counts in a split of LSE split_lse: the caller's sums become acc · rescale + weight · O_s.
  __device__ __forceinline__ void add(float split_lse, float& rescale, float& weight) {
    const float grown = fmaxf(top, split_lse);
    const float base = grown == -INFINITY ? 0.0f : grown;
    rescale = expf(top - base);
    weight = expf(split_lse - base);
    top = grown;
    sum = sum * rescale + weight;
  }
  __device__ __forceinline__ float inverse_sum() const { return sum > 0.0f ? 1.0f / sum : 0.0f; }
  __device__ __forceinline__ float lse() const { return sum > 0.0f ? top + logf(sum) : -INFINITY; }
};

// One work item: the CTA's (batch, kv head, row block) `x` and its split `split`.
template <int D, class T, class G>
__device__ __forceinline__ void decode_item(const FusedAttentionArgs& args, const DecodeParams& p,
                                            unsigned char* smem_raw, int x, int split) {
  using Tr = DecodeTraits<D, G>;
  using Mma = attention::MmaType<T>;
  const std::uint32_t smem = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw));
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int kv_heads = static_cast<int>(args.kv_heads), seq_q = static_cast<int>(args.seq_q);
  const int row_block = x % p.row_blocks;
  const int pair = x / p.row_blocks;
  const int b = pair / kv_heads, kvh = pair % kv_heads;
  const int split_begin = split * p.keys_per_split;
  const int split_end = min(split_begin + p.keys_per_split, p.keys);
  const int first_row = row_block * Tr::kRows;

  // Q's 16 packed rows, zero-filled past the packed count.
  for (int c = tid; c < Tr::kRows * Tr::kChunks; c += Tr::kThreads) {
    const int r = c / Tr::kChunks, chunk = c % Tr::kChunks, packed = first_row + r;
    const bool valid = packed < p.rows;
    const T* src = static_cast<const T*>(args.q);
    if (valid)
      src += b * args.q_stride[0] + (kvh * p.group + packed / seq_q) * args.q_stride[1] +
             static_cast<std::int64_t>(packed % seq_q) * args.q_stride[2] + chunk * 8;
    attention::cp_async_16(smem + attention::swizzle<Tr>(r, chunk), src, valid);
  }
  attention::cp_async_commit();

  // This warp's tiles: tile t of the split holds keys split_begin + t·kWarpKeys onwards; warp w
  // takes t = w, w + kWarps, ...; its j-th goes to stage j % kStages of its own region.
  const int split_tiles = (max(split_end - split_begin, 0) + Tr::kWarpKeys - 1) / Tr::kWarpKeys;
  const int my_tiles = split_tiles > warp ? (split_tiles - warp + Tr::kWarps - 1) / Tr::kWarps : 0;
  const std::uint32_t warp_stages = smem + Tr::kOffStages + warp * Tr::kStages * Tr::kStageBytes;
  const T* k_head = static_cast<const T*>(args.k) + b * args.k_stride[0] + kvh * args.k_stride[1];
  const T* v_head = static_cast<const T*>(args.v) + b * args.v_stride[0] + kvh * args.v_stride[1];
  const int copy_chunk = lane % Tr::kChunks, copy_row0 = lane / Tr::kChunks;
  auto load_tile = [&](int j, std::uint32_t stage) {
    const int key0 = split_begin + (warp + j * Tr::kWarps) * Tr::kWarpKeys;
#pragma unroll
    for (int pass = 0; pass < Tr::kWarpKeys / Tr::kCopyRows; ++pass) {
      const int row = copy_row0 + pass * Tr::kCopyRows, key = key0 + row;
      const bool valid = key < split_end;  // keys of the next split are not this CTA's to read
      const std::uint32_t dst = stage + attention::swizzle<Tr>(row, copy_chunk);
      // A zero-filled copy reads nothing; its address stays inside the tensor.
      cp_async_kv<G::kL2Prefetch>(
          dst, valid ? k_head + key * args.k_stride[2] + copy_chunk * 8 : static_cast<const T*>(args.k), valid);
      cp_async_kv<G::kL2Prefetch>(dst + Tr::kTileBytes,
                                  valid ? v_head + key * args.v_stride[2] + copy_chunk * 8 : static_cast<const T*>(args.v),
                                  valid);
    }
  };
#pragma unroll
  for (int s = 0; s < Tr::kStages - 1; ++s) {
    if (s < my_tiles) load_tile(s, warp_stages + s * Tr::kStageBytes);
    attention::cp_async_commit();  // empty groups too: the group count stays uniform
  }

  // Q is the oldest group: with kStages − 1 younger ones pending it has landed; the barrier makes
  // every thread's share visible, then each warp keeps Q's A fragments in registers.
  cp_async_wait_group<Tr::kStages - 1>();
  __syncthreads();
  std::uint32_t q_frag[Tr::kKSteps][4];
  {
    const std::uint32_t q_lane = attention::swizzle<Tr>(((lane / 8) % 2) * 8 + lane % 8, lane / 16);
#pragma unroll
    for (int ks = 0; ks < Tr::kKSteps; ++ks) attention::ldmatrix_x4<false>(q_frag[ks], smem, q_lane, ks << 5, 0);
  }

  // Keys each of this thread's two rows (lane / 4, + 8) may see in this split: [.., row_end).
  // Causal: query row i sees key j iff j <= i + causal_offset (the launcher clamps the offset).
  int row_end[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int packed = first_row + lane / 4 + half * 8;
    row_end[half] = split_end;
    if (args.causal && packed < p.rows)
      row_end[half] = min(split_end, max(packed % seq_q + static_cast<int>(args.causal_offset) + 1, 0));
  }
  // Tiles ending at or before every row's end need no mask.
  const int mask_from = __reduce_min_sync(0xffffffffu, min(row_end[0], row_end[1]));

  const float scale_log2 = args.softmax_scale * attention::kLog2e;
  float acc_o[Tr::kDTiles][4];
#pragma unroll
  for (int dt = 0; dt < Tr::kDTiles; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc_o[dt][e] = 0.0f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.0f, 0.0f};
  const std::uint32_t k_lane = attention::swizzle<Tr>((lane / 16) * 8 + lane % 8, (lane / 8) % 2);
  const std::uint32_t v_lane = attention::swizzle<Tr>(((lane / 8) % 2) * 8 + lane % 8, lane / 16);
  int read_stage = 0, write_stage = Tr::kStages - 1;
  for (int j = 0; j < my_tiles; ++j) {
    __syncwarp();  // every lane is done reading the stage refilled next (tile j − 1's)
    if (j + Tr::kStages - 1 < my_tiles) load_tile(j + Tr::kStages - 1, warp_stages + write_stage * Tr::kStageBytes);
    attention::cp_async_commit();
    cp_async_wait_group<Tr::kStages - 1>();  // tile j has landed (this lane's copies)
    __syncwarp();                            // ... and every lane's
    const std::uint32_t k_tile = warp_stages + read_stage * Tr::kStageBytes, v_tile = k_tile + Tr::kTileBytes;
    read_stage = read_stage + 1 == Tr::kStages ? 0 : read_stage + 1;
    write_stage = write_stage + 1 == Tr::kStages ? 0 : write_stage + 1;

    float acc_s[Tr::kKTiles][4];
#pragma unroll
    for (int ks = 0; ks < Tr::kKSteps; ++ks)
#pragma unroll
      for (int nt = 0; nt < Tr::kKTiles; nt += 2) {
        std::uint32_t bk[4];
        attention::ldmatrix_x4<false>(bk, k_tile, k_lane, ks << 5, nt * 8 * Tr::kRowBytes);
        if (ks == 0) {
          Mma::mma_first(acc_s[nt], q_frag[ks], bk[0], bk[1]);
          Mma::mma_first(acc_s[nt + 1], q_frag[ks], bk[2], bk[3]);
        } else {
          Mma::mma(acc_s[nt], q_frag[ks], bk[0], bk[1]);
          Mma::mma(acc_s[nt + 1], q_frag[ks], bk[2], bk[3]);
        }
      }

    const int key0 = split_begin + (warp + j * Tr::kWarps) * Tr::kWarpKeys;
    if (key0 + Tr::kWarpKeys > mask_from) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int limit = row_end[half] - key0 - (lane % 4) * 2;  // keys seen from this thread's first column
#pragma unroll
        for (int nt = 0; nt < Tr::kKTiles; ++nt) {
          if (nt * 8 >= limit) acc_s[nt][half * 2] = -INFINITY;
          if (nt * 8 + 1 >= limit) acc_s[nt][half * 2 + 1] = -INFINITY;
        }
      }
    }

    // Online softmax in base 2 over the quad of threads holding a row.
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      float mx = row_max[half];
#pragma unroll
      for (int nt = 0; nt < Tr::kKTiles; ++nt) mx = fmaxf(mx, fmaxf(acc_s[nt][half * 2], acc_s[nt][half * 2 + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      // A row that has seen no key keeps −inf; its scaled max is taken as 0 so exp2 gives 0, not NaN.
      const float max_scaled = mx == -INFINITY ? 0.0f : mx * scale_log2;
      const float rescale = attention::fast_exp2(row_max[half] * scale_log2 - max_scaled);
      row_max[half] = mx;
      float sum = 0.0f;
#pragma unroll
      for (int nt = 0; nt < Tr::kKTiles; ++nt) {
        const float p0 = attention::fast_exp2(acc_s[nt][half * 2] * scale_log2 - max_scaled);
        const float p1 = attention::fast_exp2(acc_s[nt][half * 2 + 1] * scale_log2 - max_scaled);
        acc_s[nt][half * 2] = p0;
        acc_s[nt][half * 2 + 1] = p1;
        sum += p0 + p1;
      }
      row_sum[half] = row_sum[half] * rescale + sum;  // this thread's columns; the quad is summed at the end
#pragma unroll
      for (int dt = 0; dt < Tr::kDTiles; ++dt) {
        acc_o[dt][half * 2] *= rescale;
        acc_o[dt][half * 2 + 1] *= rescale;
      }
    }

    // O += P · V, P repacked from the S accumulators as the A operand.
#pragma unroll
    for (int kp = 0; kp < Tr::kPSteps; ++kp) {
      const std::uint32_t a[4] = {Mma::pack(acc_s[2 * kp][0], acc_s[2 * kp][1]), Mma::pack(acc_s[2 * kp][2], acc_s[2 * kp][3]),
                                  Mma::pack(acc_s[2 * kp + 1][0], acc_s[2 * kp + 1][1]),
                                  Mma::pack(acc_s[2 * kp + 1][2], acc_s[2 * kp + 1][3])};
#pragma unroll
      for (int dt = 0; dt < Tr::kDTiles; dt += 2) {
        std::uint32_t bv[4];
        attention::ldmatrix_x4<true>(bv, v_tile, v_lane, dt << 4, kp * 16 * Tr::kRowBytes);
        Mma::mma(acc_o[dt], a, bv[0], bv[1]);
        Mma::mma(acc_o[dt + 1], a, bv[2], bv[3]);
      }
    }
  }

  // Merge the warps: each writes its O, scaled max and sum over the stages (once every warp is
  // done with them), then each of a row's kThreads / 16 threads merges kMergeCols of its columns.
  attention::cp_async_wait_all();
  __syncthreads();
  float* merge_o = reinterpret_cast<float*>(smem_raw + Tr::kOffStages);
  float* merge_max = reinterpret_cast<float*>(smem_raw + Tr::kOffMergeMax);
  float* merge_sum = reinterpret_cast<float*>(smem_raw + Tr::kOffMergeSum);
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    float sum = row_sum[half];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const int row = warp * Tr::kRows + lane / 4 + half * 8;
    if (lane % 4 == 0) {
      merge_max[row] = row_max[half] == -INFINITY ? -INFINITY : row_max[half] * scale_log2;
      merge_sum[row] = sum;
    }
#pragma unroll
    for (int dt = 0; dt < Tr::kDTiles; ++dt)
      *reinterpret_cast<float2*>(merge_o + row * Tr::kMergeStride + dt * 8 + (lane % 4) * 2) =
          make_float2(acc_o[dt][half * 2], acc_o[dt][half * 2 + 1]);
  }
  __syncthreads();

  const int row = tid / (Tr::kThreads / Tr::kRows), col0 = (tid % (Tr::kThreads / Tr::kRows)) * Tr::kMergeCols;
  float top = -INFINITY;
#pragma unroll
  for (int w = 0; w < Tr::kWarps; ++w) top = fmaxf(top, merge_max[w * Tr::kRows + row]);
  float weight[Tr::kWarps], total = 0.0f;
#pragma unroll
  for (int w = 0; w < Tr::kWarps; ++w) {
    weight[w] = top == -INFINITY ? 0.0f : attention::fast_exp2(merge_max[w * Tr::kRows + row] - top);
    total += weight[w] * merge_sum[w * Tr::kRows + row];
  }
  const float inv = total > 0.0f ? 1.0f / total : 0.0f;
  float o[Tr::kMergeCols / 8][8];  // whole 16-byte stores of T
#pragma unroll
  for (int c = 0; c < Tr::kMergeCols; c += 4) {
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
    for (int w = 0; w < Tr::kWarps; ++w) {
      const float4 part = *reinterpret_cast<const float4*>(merge_o + (w * Tr::kRows + row) * Tr::kMergeStride + col0 + c);
      acc.x += weight[w] * part.x;
      acc.y += weight[w] * part.y;
      acc.z += weight[w] * part.z;
      acc.w += weight[w] * part.w;
    }
    o[c / 8][c % 8] = acc.x * inv;
    o[c / 8][c % 8 + 1] = acc.y * inv;
    o[c / 8][c % 8 + 2] = acc.z * inv;
    o[c / 8][c % 8 + 3] = acc.w * inv;
  }
  // The [B, H, Sq] row of packed row `r` of this CTA (r < the CTA's valid rows).
  auto row_id_of = [&](int r) {
    const int packed = first_row + r, h = kvh * p.group + packed / seq_q;
    return (static_cast<std::int64_t>(b) * args.heads + h) * args.seq_q + packed % seq_q;
  };
  auto out_of = [&](int r) {
    const int packed = first_row + r, h = kvh * p.group + packed / seq_q;
    return static_cast<T*>(args.o) + b * args.o_stride[0] + h * args.o_stride[1] + (packed % seq_q) * args.o_stride[2];
  };
  const int valid_rows = min(Tr::kRows, p.rows - first_row);
  const bool row_valid = row < valid_rows, row_leader = tid % (Tr::kThreads / Tr::kRows) == 0;
  const float lse = total > 0.0f ? top * kLn2 + logf(total) : -INFINITY;
  if (p.splits == 1) {
    if (!row_valid) return;
#pragma unroll
    for (int c = 0; c < Tr::kMergeCols / 8; ++c) store_floats<T, 8>(out_of(row) + col0 + c * 8, o[c]);
    if (args.lse != nullptr && row_leader) args.lse[row_id_of(row)] = lse;
    return;
  }
  if (G::clusters(p.splits)) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    // The item's splits are one cluster along y, split s its CTA of rank s. Each CTA but the first
    // (which keeps its own in registers) stores its O
    // normalised and its natural-log LSE into its own shared memory, past the warps' merge; after
    // a cluster barrier the first reads the others' from theirs and merges them in split order as
    // the workspace merge below does; a second barrier holds the others until it has read them.
    namespace cg = cooperative_groups;
    const cg::cluster_group cluster = cg::this_cluster();
    float* slot_o = reinterpret_cast<float*>(smem_raw + Tr::kOffClusterSlot);  // [kRows][D]
    float* slot_lse = slot_o + Tr::kRows * D;                                  // [kRows]
    if (split != 0) {
#pragma unroll
      for (int c = 0; c < Tr::kMergeCols; c += 4)
        *reinterpret_cast<float4*>(slot_o + row * D + col0 + c) =
            make_float4(o[c / 8][c % 8], o[c / 8][c % 8 + 1], o[c / 8][c % 8 + 2], o[c / 8][c % 8 + 3]);
      if (row_leader) slot_lse[row] = lse;
      cluster.sync();
      cluster.sync();
      return;
    }
    cluster.sync();
    float acc[Tr::kMergeCols];
    SplitMerge merge;
#pragma unroll
    for (int c = 0; c < Tr::kMergeCols; ++c) acc[c] = 0.0f;
    for (int s = 0; s < p.splits; ++s) {
      const float* from = s == 0 ? nullptr : cluster.map_shared_rank(slot_o, s) + row * D + col0;
      float rescale, w;
      merge.add(s == 0 ? lse : cluster.map_shared_rank(slot_lse, s)[row], rescale, w);
#pragma unroll
      for (int c = 0; c < Tr::kMergeCols; c += 4) {
        const float4 part =
            s == 0 ? make_float4(o[c / 8][c % 8], o[c / 8][c % 8 + 1], o[c / 8][c % 8 + 2], o[c / 8][c % 8 + 3])
                   : *reinterpret_cast<const float4*>(from + c);
        acc[c] = acc[c] * rescale + w * part.x;
        acc[c + 1] = acc[c + 1] * rescale + w * part.y;
        acc[c + 2] = acc[c + 2] * rescale + w * part.z;
        acc[c + 3] = acc[c + 3] * rescale + w * part.w;
      }
    }
    cluster.sync();  // the others' shared memory is read: they may exit
    if (!row_valid) return;
    const float inv = merge.inverse_sum();
#pragma unroll
    for (int c = 0; c < Tr::kMergeCols; ++c) o[c / 8][c % 8] = acc[c] * inv;
#pragma unroll
    for (int c = 0; c < Tr::kMergeCols / 8; ++c) store_floats<T, 8>(out_of(row) + col0 + c * 8, o[c]);
    if (args.lse != nullptr && row_leader) args.lse[row_id_of(row)] = merge.lse();
#else
    __trap();  // the plan never merges in clusters off compute capability 9.0 (flash_decode_plan)
#endif
    return;
  }
  if (row_valid) {
    const std::int64_t row_id = row_id_of(row);
    float* out = p.partial_o + (row_id * p.splits + split) * D + col0;
#pragma unroll
    for (int c = 0; c < Tr::kMergeCols; c += 4)
      *reinterpret_cast<float4*>(out + c) = make_float4(o[c / 8][c % 8], o[c / 8][c % 8 + 1], o[c / 8][c % 8 + 2], o[c / 8][c % 8 + 3]);
    if (row_leader) p.partial_lse[row_id * p.splits + split] = lse;
  }

  // Arrival: this CTA's partials are visible device-wide (fence) before it counts itself; the
  // last of the item's splits to arrive merges them all.
  __shared__ int is_last;
  __threadfence();
  __syncthreads();
  if (tid == 0) {
    const int arrived = atomicAdd(p.counters + x, 1) + 1;
    is_last = arrived == p.splits;
    if (is_last) p.counters[x] = 0;  // every split has counted itself: 0 for the next launch
  }
  __syncthreads();
  if (!is_last) return;
  __threadfence();  // the other CTAs' partials, published before their count, are read after it

  // O and the LSE of each row over the splits (SplitMerge), 4 columns of a row per thread. Every
  // load is independent of the arithmetic (a split's LSE beside its O), so the loop, unrolled by 8,
  // keeps 8 splits' loads in flight: a round trip to L2 per 8 splits, with no pass over the LSEs
  // before the sums.
  constexpr int kQuads = D / 4;
  for (int item = tid; item < valid_rows * kQuads; item += Tr::kThreads) {
    const int r = item / kQuads, c = (item % kQuads) * 4;
    const std::int64_t row_id = row_id_of(r);
    const float* o_of = p.partial_o + row_id * p.splits * D + c;
    const float* lse_of = p.partial_lse + row_id * p.splits;
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    SplitMerge merge;
#pragma unroll 8
    for (int s = 0; s < p.splits; ++s) {
      const float4 part = __ldcg(reinterpret_cast<const float4*>(o_of + static_cast<std::int64_t>(s) * D));
      float rescale, w;
      merge.add(__ldcg(lse_of + s), rescale, w);
      acc.x = acc.x * rescale + w * part.x;
      acc.y = acc.y * rescale + w * part.y;
      acc.z = acc.z * rescale + w * part.z;
      acc.w = acc.w * rescale + w * part.w;
    }
    const float inv = merge.inverse_sum();  // 0: the row sees no key
    const float out[4] = {acc.x * inv, acc.y * inv, acc.z * inv, acc.w * inv};
    store_floats<T, 4>(out_of(r) + c, out);
    if (args.lse != nullptr && c == 0) args.lse[row_id] = merge.lse();
  }
}

template <int D, class T, class G>
__global__ void __launch_bounds__(DecodeTraits<D, G>::kThreads, G::kCtasPerSm)
    flash_decode_splitkv_kernel(FusedAttentionArgs args, DecodeParams p) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  if constexpr (G::kPersistent) {
    // Items x fastest, as the hardware deals a (x, split) grid; a CTA's next item reuses the
    // shared memory once every thread is done with the last.
    const std::int64_t xs = args.batch * args.kv_heads * p.row_blocks;
    for (std::int64_t item = blockIdx.x; item < xs * p.splits; item += gridDim.x) {
      decode_item<D, T, G>(args, p, smem_raw, static_cast<int>(item % xs), static_cast<int>(item / xs));
      __syncthreads();
    }
  } else {
    decode_item<D, T, G>(args, p, smem_raw, static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.y));
  }
}

}  // namespace attnprof::cuda::decode
