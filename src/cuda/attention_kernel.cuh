#pragma once
// The FlashAttention-2-class forward shared by `flash` and `efficient` (different tile traits).
//
// Tiling: a CTA owns kBlockM query rows of one (batch, head); its kWarps warps split those rows,
// 16·kMTiles each, so softmax statistics never cross warps. Keys/values stream through shared
// memory in kBlockN-row tiles (cp.async, 16 B per thread-copy, XOR-swizzled rows so ldmatrix is
// conflict-free); with kPipelined the next K/V tile loads while the current one is used (double
// buffering). S = Q·Kᵀ and O += P·V run on mma.sync m16n8k16 (bf16/fp16 in, fp32 accumulate); P
// stays in registers, repacked from the S accumulators as the A operand of the second GEMM.
// Online softmax in base 2 (scores pre-multiplied by softmax_scale·log2 e). Causal (top-left):
// key tiles wholly above the diagonal are skipped, only tiles crossing it (or the Sk tail) are
// masked. Q rows past Sq and K/V rows past Sk are zero-filled by cp.async (src-size 0).
// The output goes through the warp's own Q rows in shared memory for 16-byte coalesced stores.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/fused_attention.h"

namespace attnprof::cuda::attention {

constexpr float kLog2e = 1.4426950408889634f;

template <int kHeadDim_, int kBlockM_, int kBlockN_, int kWarps_, bool kPipelined_, bool kQInRegisters_ = false>
struct Traits {
  // Q's A-operand fragments loaded once into registers instead of by ldmatrix for every K tile.
  static constexpr bool kQInRegisters = kQInRegisters_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBlockM = kBlockM_;
  static constexpr int kBlockN = kBlockN_;
  static constexpr int kWarps = kWarps_;
  static constexpr bool kPipelined = kPipelined_;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kRowsPerWarp = kBlockM / kWarps;
  static constexpr int kMTiles = kRowsPerWarp / 16;
  static constexpr int kNTiles = kBlockN / 8;    // n-tiles of S
  static constexpr int kDTiles = kHeadDim / 8;   // n-tiles of O
  static constexpr int kKSteps = kHeadDim / 16;  // k-steps of Q·Kᵀ
  static constexpr int kPSteps = kBlockN / 16;   // k-steps of P·V
  static constexpr int kChunksPerRow = kHeadDim / 8;  // 16-byte chunks
  static constexpr int kStages = kPipelined ? 2 : 1;
  static constexpr int kSmemQ = kBlockM * kHeadDim * 2;
  static constexpr int kSmemKV = kBlockN * kHeadDim * 2;
  static constexpr int kSmemBytes = kSmemQ + 2 * kStages * kSmemKV;
  static_assert(kRowsPerWarp % 16 == 0, "each warp owns whole 16-row MMA tiles");
  static_assert(kNTiles % 2 == 0 && kDTiles % 2 == 0, "ldmatrix.x4 loads pairs of n-tiles");
  static_assert(kChunksPerRow >= 8, "the XOR swizzle permutes 8 chunks of a row");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per CTA on sm_90");
};

template <class T>
struct MmaType;
template <>
struct MmaType<__nv_bfloat16> {
  __device__ static __forceinline__ void mma(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                             std::uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  __device__ static __forceinline__ std::uint32_t pack(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<std::uint32_t*>(&v);
  }
};
template <>
struct MmaType<__half> {
  __device__ static __forceinline__ void mma(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                             std::uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  __device__ static __forceinline__ std::uint32_t pack(float lo, float hi) {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<std::uint32_t*>(&v);
  }
};

// 2^x on the SFU (MUFU.EX2), flushing denormals: exp2f without fast-math adds range fix-ups.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ void cp_async_16(std::uint32_t smem_addr, const void* gmem, bool valid) {
  int src_bytes = valid ? 16 : 0;  // 0: fill the 16 bytes with zeros, read nothing
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr), "l"(gmem), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], std::uint32_t smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr));
}

// Byte offset of 16-byte chunk `chunk` of row `row` in a [rows][kHeadDim] tile: chunks XOR-permuted
// by row % 8, so the 8 rows an ldmatrix phase reads hit 8 different bank groups.
template <class Tr>
__device__ __forceinline__ std::uint32_t swizzle(int row, int chunk) {
  return static_cast<std::uint32_t>(row * Tr::kHeadDim * 2 + ((chunk ^ (row & 7)) << 4));
}

// Copies rows [0, tile_rows) of a tile (rows past rows_valid zero-filled) into shared memory.
template <class Tr, class T>
__device__ __forceinline__ void load_tile(std::uint32_t smem, const T* gmem, std::int64_t row_stride, int rows_valid,
                                          int tile_rows) {
  for (int i = threadIdx.x; i < tile_rows * Tr::kChunksPerRow; i += Tr::kThreads) {
    int row = i / Tr::kChunksPerRow, chunk = i % Tr::kChunksPerRow;
    bool valid = row < rows_valid;
    const T* src = valid ? gmem + row * row_stride + chunk * 8 : gmem;
    cp_async_16(smem + swizzle<Tr>(row, chunk), src, valid);
  }
}

template <class Tr, class T>
__global__ void __launch_bounds__(Tr::kThreads) attention_forward_kernel(FusedAttentionArgs args) {
  using Mma = MmaType<T>;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  const std::uint32_t smem_q = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw));
  const std::uint32_t smem_k0 = smem_q + Tr::kSmemQ;
  const std::uint32_t smem_v0 = smem_k0 + Tr::kStages * Tr::kSmemKV;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // Longest-first: with causal masking the last query blocks have the most key tiles.
  const int m_block = gridDim.x - 1 - blockIdx.x;
  const int bh = blockIdx.y;
  const int b = bh / static_cast<int>(args.heads), h = bh % static_cast<int>(args.heads);
  const int kvh = h / static_cast<int>(args.heads / args.kv_heads);
  const int seq_q = static_cast<int>(args.seq_q), seq_k = static_cast<int>(args.seq_k);
  const int q_start = m_block * Tr::kBlockM;

  const T* q = static_cast<const T*>(args.q) + b * args.q_stride[0] + h * args.q_stride[1] + q_start * args.q_stride[2];
  const T* k = static_cast<const T*>(args.k) + b * args.k_stride[0] + kvh * args.k_stride[1];
  const T* v = static_cast<const T*>(args.v) + b * args.v_stride[0] + kvh * args.v_stride[1];

  int n_blocks = (seq_k + Tr::kBlockN - 1) / Tr::kBlockN;
  if (args.causal) n_blocks = min(n_blocks, (q_start + Tr::kBlockM + Tr::kBlockN - 1) / Tr::kBlockN);

  load_tile<Tr>(smem_q, q, args.q_stride[2], seq_q - q_start, Tr::kBlockM);
  load_tile<Tr>(smem_k0, k, args.k_stride[2], seq_k, Tr::kBlockN);
  load_tile<Tr>(smem_v0, v, args.v_stride[2], seq_k, Tr::kBlockN);
  cp_async_commit();

  const float scale_log2 = args.softmax_scale * kLog2e;
  float acc_o[Tr::kMTiles][Tr::kDTiles][4];
  float row_max[Tr::kMTiles][2], row_sum[Tr::kMTiles][2];
#pragma unroll
  for (int mt = 0; mt < Tr::kMTiles; ++mt) {
#pragma unroll
    for (int dt = 0; dt < Tr::kDTiles; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_o[mt][dt][e] = 0.0f;
    row_max[mt][0] = row_max[mt][1] = -INFINITY;
    row_sum[mt][0] = row_sum[mt][1] = 0.0f;
  }
  const int warp_row0 = warp * Tr::kRowsPerWarp;

  std::uint32_t q_frag[Tr::kQInRegisters ? Tr::kMTiles : 1][Tr::kQInRegisters ? Tr::kKSteps : 1][4];
  if constexpr (Tr::kQInRegisters) {
    cp_async_wait_all();
    __syncthreads();
#pragma unroll
    for (int ks = 0; ks < Tr::kKSteps; ++ks)
#pragma unroll
      for (int mt = 0; mt < Tr::kMTiles; ++mt) {
        int row = warp_row0 + mt * 16 + ((lane / 8) % 2) * 8 + lane % 8;
        ldmatrix_x4(q_frag[mt][ks], smem_q + swizzle<Tr>(row, ks * 2 + lane / 16));
      }
  }

  for (int n_block = 0; n_block < n_blocks; ++n_block) {
    const int stage = Tr::kPipelined ? (n_block & 1) : 0;
    const std::uint32_t smem_k = smem_k0 + stage * Tr::kSmemKV, smem_v = smem_v0 + stage * Tr::kSmemKV;
    if constexpr (Tr::kPipelined) {
      cp_async_wait_all();
      __syncthreads();  // tile n_block is visible; every warp is done with tile n_block-1's buffer
      if (n_block + 1 < n_blocks) {
        const int next = (n_block + 1) * Tr::kBlockN;
        const std::uint32_t other = (stage ^ 1) * Tr::kSmemKV;
        load_tile<Tr>(smem_k0 + other, k + next * args.k_stride[2], args.k_stride[2], seq_k - next, Tr::kBlockN);
        load_tile<Tr>(smem_v0 + other, v + next * args.v_stride[2], args.v_stride[2], seq_k - next, Tr::kBlockN);
        cp_async_commit();
      }
    } else {
      if (n_block > 0) {
        __syncthreads();  // every warp is done with the previous tile
        const int start = n_block * Tr::kBlockN;
        load_tile<Tr>(smem_k, k + start * args.k_stride[2], args.k_stride[2], seq_k - start, Tr::kBlockN);
        load_tile<Tr>(smem_v, v + start * args.v_stride[2], args.v_stride[2], seq_k - start, Tr::kBlockN);
        cp_async_commit();
      }
      cp_async_wait_all();
      __syncthreads();
    }

    // S = Q · Kᵀ for this warp's rows and the tile's kBlockN keys.
    float acc_s[Tr::kMTiles][Tr::kNTiles][4];
#pragma unroll
    for (int mt = 0; mt < Tr::kMTiles; ++mt)
#pragma unroll
      for (int nt = 0; nt < Tr::kNTiles; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc_s[mt][nt][e] = 0.0f;
#pragma unroll
    for (int ks = 0; ks < Tr::kKSteps; ++ks) {
      std::uint32_t a[Tr::kMTiles][4];
#pragma unroll
      for (int mt = 0; mt < Tr::kMTiles; ++mt) {
        if constexpr (Tr::kQInRegisters) {
#pragma unroll
          for (int i = 0; i < 4; ++i) a[mt][i] = q_frag[mt][ks][i];
        } else {
          int row = warp_row0 + mt * 16 + ((lane / 8) % 2) * 8 + lane % 8;
          ldmatrix_x4(a[mt], smem_q + swizzle<Tr>(row, ks * 2 + lane / 16));
        }
      }
#pragma unroll
      for (int nt = 0; nt < Tr::kNTiles; nt += 2) {
        std::uint32_t bk[4];
        int row = nt * 8 + (lane / 16) * 8 + lane % 8;
        ldmatrix_x4(bk, smem_k + swizzle<Tr>(row, ks * 2 + (lane / 8) % 2));
#pragma unroll
        for (int mt = 0; mt < Tr::kMTiles; ++mt) {
          Mma::mma(acc_s[mt][nt], a[mt], bk[0], bk[1]);
          Mma::mma(acc_s[mt][nt + 1], a[mt], bk[2], bk[3]);
        }
      }
    }

    // Mask only where needed: the Sk tail, and (causal) tiles that cross the diagonal.
    const int n_start = n_block * Tr::kBlockN;
    const bool needs_mask =
        n_start + Tr::kBlockN > seq_k || (args.causal && n_start + Tr::kBlockN - 1 > q_start + warp_row0);
    if (needs_mask) {
#pragma unroll
      for (int mt = 0; mt < Tr::kMTiles; ++mt)
#pragma unroll
        for (int nt = 0; nt < Tr::kNTiles; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            int row = q_start + warp_row0 + mt * 16 + lane / 4 + (e / 2) * 8;
            int col = n_start + nt * 8 + (lane % 4) * 2 + (e % 2);
            if (col >= seq_k || (args.causal && col > row)) acc_s[mt][nt][e] = -INFINITY;
          }
    }

    // Online softmax: new running max, rescale O and the running sum, P = exp2(S·c − m·c).
#pragma unroll
    for (int mt = 0; mt < Tr::kMTiles; ++mt) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        float mx = row_max[mt][half];
#pragma unroll
        for (int nt = 0; nt < Tr::kNTiles; ++nt)
          mx = fmaxf(mx, fmaxf(acc_s[mt][nt][half * 2], acc_s[mt][nt][half * 2 + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        // A row with every key masked so far keeps max -inf; use 0 so exp2 gives 0, not NaN.
        const float max_scaled = mx == -INFINITY ? 0.0f : mx * scale_log2;
        const float rescale = fast_exp2(row_max[mt][half] * scale_log2 - max_scaled);
        row_max[mt][half] = mx;
        row_sum[mt][half] *= rescale;
#pragma unroll
        for (int dt = 0; dt < Tr::kDTiles; ++dt) {
          acc_o[mt][dt][half * 2] *= rescale;
          acc_o[mt][dt][half * 2 + 1] *= rescale;
        }
        float sum = 0.0f;
#pragma unroll
        for (int nt = 0; nt < Tr::kNTiles; ++nt) {
          float p0 = fast_exp2(acc_s[mt][nt][half * 2] * scale_log2 - max_scaled);
          float p1 = fast_exp2(acc_s[mt][nt][half * 2 + 1] * scale_log2 - max_scaled);
          acc_s[mt][nt][half * 2] = p0;
          acc_s[mt][nt][half * 2 + 1] = p1;
          sum += p0 + p1;
        }
        row_sum[mt][half] += sum;  // this thread's columns only; the quad is summed at the end
      }
    }

    // O += P · V, P repacked from the S accumulators as the A operand (never through memory).
#pragma unroll
    for (int kp = 0; kp < Tr::kPSteps; ++kp) {
      std::uint32_t a[Tr::kMTiles][4];
#pragma unroll
      for (int mt = 0; mt < Tr::kMTiles; ++mt) {
        a[mt][0] = Mma::pack(acc_s[mt][2 * kp][0], acc_s[mt][2 * kp][1]);
        a[mt][1] = Mma::pack(acc_s[mt][2 * kp][2], acc_s[mt][2 * kp][3]);
        a[mt][2] = Mma::pack(acc_s[mt][2 * kp + 1][0], acc_s[mt][2 * kp + 1][1]);
        a[mt][3] = Mma::pack(acc_s[mt][2 * kp + 1][2], acc_s[mt][2 * kp + 1][3]);
      }
#pragma unroll
      for (int dt = 0; dt < Tr::kDTiles; dt += 2) {
        std::uint32_t bv[4];
        int row = kp * 16 + ((lane / 8) % 2) * 8 + lane % 8;
        ldmatrix_x4_trans(bv, smem_v + swizzle<Tr>(row, dt + lane / 16));
#pragma unroll
        for (int mt = 0; mt < Tr::kMTiles; ++mt) {
          Mma::mma(acc_o[mt][dt], a[mt], bv[0], bv[1]);
          Mma::mma(acc_o[mt][dt + 1], a[mt], bv[2], bv[3]);
        }
      }
    }
  }

  // Epilogue: O /= row sum; LSE; O through this warp's own Q rows in shared memory.
  __syncwarp();
  T* o = static_cast<T*>(args.o) + b * args.o_stride[0] + h * args.o_stride[1];
#pragma unroll
  for (int mt = 0; mt < Tr::kMTiles; ++mt) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      float sum = row_sum[mt][half];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;  // a fully masked row gives zeros
      const int row = warp_row0 + mt * 16 + lane / 4 + half * 8;
      if (args.lse != nullptr && lane % 4 == 0 && q_start + row < seq_q) {
        float lse = sum > 0.0f ? row_max[mt][half] * args.softmax_scale + logf(sum) : -INFINITY;
        args.lse[(static_cast<std::int64_t>(b) * args.heads + h) * args.seq_q + q_start + row] = lse;
      }
#pragma unroll
      for (int dt = 0; dt < Tr::kDTiles; ++dt) {
        std::uint32_t packed = Mma::pack(acc_o[mt][dt][half * 2] * inv, acc_o[mt][dt][half * 2 + 1] * inv);
        std::uint32_t addr = smem_q + swizzle<Tr>(row, dt) + (lane % 4) * 4;
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(packed));
      }
    }
  }
  __syncwarp();
  for (int i = lane; i < Tr::kRowsPerWarp * Tr::kChunksPerRow; i += 32) {
    int row = warp_row0 + i / Tr::kChunksPerRow, chunk = i % Tr::kChunksPerRow;
    if (q_start + row >= seq_q) continue;
    uint4 value;
    std::uint32_t addr = smem_q + swizzle<Tr>(row, chunk);
    asm volatile("ld.shared.v4.b32 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(value.x), "=r"(value.y), "=r"(value.z), "=r"(value.w)
                 : "r"(addr));
    *reinterpret_cast<uint4*>(o + (q_start + row) * args.o_stride[2] + chunk * 8) = value;
  }
}

}  // namespace attnprof::cuda::attention
