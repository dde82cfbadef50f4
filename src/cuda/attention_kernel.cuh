#pragma once
// The FlashAttention-2-class forward shared by `flash` and `efficient` (different tile traits).
//
// Tiling: a CTA owns kBlockM query rows of one (batch, head); its kWarps warps split those rows,
// 16·kMTiles each, so softmax statistics never cross warps. Keys/values stream through shared
// memory in kBlockN-row tiles (cp.async, 16 B per thread-copy, XOR-swizzled rows so ldmatrix is
// conflict-free); with kPipelined the next K/V tile loads while the current one is used (double
// buffering). S = Q·Kᵀ and O += P·V run on mma.sync m16n8k16 (bf16/fp16 in, fp32 accumulate); P
// stays in registers, repacked from the S accumulators as the A operand of the second GEMM.
// Online softmax in base 2 (scores pre-multiplied by softmax_scale·log2 e) with lazy rescaling.
// Causal: query row i sees key j iff j <= i + causal_offset (0: top-left; seq_k - seq_q:
// bottom-right); key tiles wholly past the CTA's last visible key are skipped, only tiles crossing
// a warp's diagonal (or the Sk tail) are masked, and rows that see no key come out as zeros with
// LSE -inf. Q rows past Sq and K/V rows past Sk are zero-filled by cp.async (src-size 0). The
// output goes through the warp's own Q rows in shared memory for 16-byte coalesced stores.
// Head dims: the kernel for kHeadDim runs any args.head_dim that is a multiple of 8 and at most
// kHeadDim: the Q/K/V chunks past it are zero-filled on load (so they add 0 to Q·Kᵀ and give O
// columns of 0) and the epilogue stores only the head_dim real columns.
// Registers: at 32 rows per warp the accumulators alone take 192 of 255 (D=128, 64-key tiles);
// everything else is kept out of the key loop — see ThreadOffsets, fresh_tid and the coordinate
// slot in shared memory. CTA order: BlockSchedule (grouped longest-first).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/device_types.cuh"
#include "cuda/fused_attention.h"
#include "cuda/tile_swizzle.h"

namespace attnprof::cuda::attention {

constexpr float kLog2e = 1.4426950408889634f;

// The order CTAs start in. A 1-D grid; block L maps to (query block, batch·head) so that heads go
// in groups whose K and V fit a share of L2 (kL2ShareBytes), and within a group the longest query
// blocks (causal: the last) of all its heads come first — longest-first list scheduling across
// the group rather than one head after another, where each head's longest block started late and
// the last ones ran alone at the end (a list-scheduling model of the anchors: makespan 12-27% over
// the ideal head by head, as FlashAttention-2's grid, 0-3% grouped).
struct BlockSchedule {
  static constexpr std::int64_t kL2ShareBytes = 16ll << 20;
  int m_blocks = 1, heads_per_group = 1, last_group = 0;
  FastDivmod group_blocks;  // heads_per_group · m_blocks
  FastDivmod heads_full;    // heads_per_group
  FastDivmod heads_last;    // heads in the last group
  // bh_count = batch·heads; kv_bytes_per_head: K and V of one head (seq_k · D · 2 · element size).
  static BlockSchedule make(int m_blocks, int bh_count, std::int64_t kv_bytes_per_head) {
    BlockSchedule s;
    s.m_blocks = m_blocks;
    const std::int64_t fit = kL2ShareBytes / (kv_bytes_per_head > 0 ? kv_bytes_per_head : 1);
    s.heads_per_group = static_cast<int>(fit < 1 ? 1 : (fit > bh_count ? bh_count : fit));
    s.last_group = (bh_count - 1) / s.heads_per_group;
    s.group_blocks = FastDivmod(static_cast<std::uint32_t>(s.heads_per_group * m_blocks));
    s.heads_full = FastDivmod(static_cast<std::uint32_t>(s.heads_per_group));
    s.heads_last = FastDivmod(static_cast<std::uint32_t>(bh_count - s.last_group * s.heads_per_group));
    return s;
  }
  __device__ __forceinline__ void coords(int& m_block, int& bh, int block) const {
    std::uint32_t group, rank, m_rank, head;
    group_blocks.divmod(group, rank, static_cast<std::uint32_t>(block));
    (static_cast<int>(group) == last_group ? heads_last : heads_full).divmod(m_rank, head, rank);
    m_block = m_blocks - 1 - static_cast<int>(m_rank);
    bh = static_cast<int>(group) * heads_per_group + static_cast<int>(head);
  }
};

template <int kHeadDim_, int kBlockM_, int kBlockN_, int kWarps_, bool kPipelined_, bool kQInRegisters_ = false,
          int kMinBlocksPerSm_ = 0>
struct Traits {
  // __launch_bounds__ minimum CTAs per SM (0: none): k caps registers at 65536 / (kThreads · k).
  static constexpr int kMinBlocksPerSm = kMinBlocksPerSm_;
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
  // The swizzle (swizzled_offset, tile_swizzle.h): chunk ^ (row % 8) when a row holds a multiple
  // of 8 chunks; chunk ^ ((row / 2) % 4) when it holds 4 or 12 (D 32, 96: consecutive rows then
  // start on alternate halves of the 128-byte bank line, FlashAttention-2's Swizzle<2,3,3>).
  static constexpr bool kSwizzle8 = swizzle8_for(kHeadDim);
  static constexpr int kSwizzleGroup = kSwizzle8 ? 8 : 4;  // the XOR stays inside aligned groups of this many chunks
  // A power-of-two row: the row bits of a shared offset are above its chunk bits, so a k-step's
  // XOR can flip the whole lane offset; otherwise (D 96, 192) the lane's row and chunk offsets
  // are kept apart (ThreadOffsets).
  static constexpr bool kPow2Row = power_of_two_row(kHeadDim);
  // cp.async: a thread copies a fixed chunk column, kCopyGroups chunks kCopyWidth apart per row,
  // every kThreads / kCopyWidth-th row (a multiple of 8, so the swizzle is fixed per thread).
  static constexpr int kCopyWidth =
      kThreads % kChunksPerRow == 0 && (kThreads / kChunksPerRow) % 8 == 0 ? kChunksPerRow : kSwizzleGroup;
  static constexpr int kCopyGroups = kChunksPerRow / kCopyWidth;
  static constexpr int kStages = kPipelined ? 2 : 1;
  static constexpr int kSmemQ = kBlockM * kHeadDim * 2;
  static constexpr int kSmemKV = kBlockN * kHeadDim * 2;
  // Shared-memory regions (byte offsets): Q, then kStages K tiles, then kStages V tiles, then the
  // CTA's (q_start, batch·head, causal offset, seq_k) for re-reading instead of keeping them in registers.
  static constexpr std::uint32_t kOffK = kSmemQ, kOffV = kSmemQ + kStages * kSmemKV;
  static constexpr std::uint32_t kOffCoords = kSmemQ + 2 * kStages * kSmemKV;
  static constexpr int kSmemBytes = kOffCoords + 16;
  static_assert(kRowsPerWarp % 16 == 0, "each warp owns whole 16-row MMA tiles");
  static_assert(kNTiles % 2 == 0 && kDTiles % 2 == 0, "ldmatrix.x4 loads pairs of n-tiles");
  static_assert(kChunksPerRow % 4 == 0 && (kSwizzle8 || (kChunksPerRow / 4) % 2 == 1),
                "the swizzle: a multiple of 8 chunks per row, or an odd multiple of 4");
  static_assert(kCopyWidth % kSwizzleGroup == 0 && kChunksPerRow % kCopyWidth == 0 &&
                    (kThreads / kCopyWidth) % 8 == 0 && kThreads % kCopyWidth == 0,
                "a thread's copies keep one swizzle: whole swizzle groups, rows per pass a multiple of 8");
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
  // d = a·b (C = 0: the accumulator needs no zeroing first).
  __device__ static __forceinline__ void mma_first(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                                   std::uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%10,%10,%10,%10};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(0.0f));
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
  // d = a·b (C = 0: the accumulator needs no zeroing first).
  __device__ static __forceinline__ void mma_first(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                                   std::uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%10,%10,%10,%10};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(0.0f));
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

// ldmatrix.x4 at base + (offset ^ flip) + add. A thread's ldmatrix addresses for different k-steps
// differ by an XOR of the swizzled chunk bits (flip) and by whole rows (add, an immediate); the XOR
// stays inside the asm so the compiler cannot hoist one address per k-step out of the key loop and
// keep them all live (it did: 3 × 8 registers).
template <bool kTrans>
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t base, std::uint32_t offset,
                                            std::uint32_t flip, std::uint32_t add) {
  if constexpr (kTrans) {
    asm volatile(
        "{\n .reg .b32 a;\n xor.b32 a, %5, %6;\n add.u32 a, a, %4;\n add.u32 a, a, %7;\n"
        " ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [a];\n}\n"
        : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
        : "r"(base), "r"(offset), "r"(flip), "r"(add));
  } else {
    asm volatile(
        "{\n .reg .b32 a;\n xor.b32 a, %5, %6;\n add.u32 a, a, %4;\n add.u32 a, a, %7;\n"
        " ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [a];\n}\n"
        : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
        : "r"(base), "r"(offset), "r"(flip), "r"(add));
  }
}

// Special registers and the CTA's coordinates read through volatile asm, so the compiler cannot
// merge them with the prologue's: the key loop and the epilogue recompute their indices instead of
// keeping them live (or spilled) across the loop, where every register is taken by the accumulators.
__device__ __forceinline__ int fresh_tid() {
  int r;
  asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(r));
  return r;
}
// The CTA's (q_start, batch·head, offset, seq_k), stored once in shared memory by the prologue
// (volatile: the compiler cannot forward the stored registers instead).
__device__ __forceinline__ void read_coords(int& q_start, int& bh, std::uint32_t addr) {
  asm volatile("ld.shared.v2.u32 {%0,%1}, [%2];\n" : "=r"(q_start), "=r"(bh) : "r"(addr));
}
__device__ __forceinline__ int read_slot(std::uint32_t addr) {
  int v;
  asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(addr));
  return v;
}
__device__ __forceinline__ int read_q_start(std::uint32_t addr) {
  int q_start;
  asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(q_start) : "r"(addr));
  return q_start;
}

// Byte offset of 16-byte chunk `chunk` of row `row` in a swizzled [rows][kHeadDim] tile
// (swizzled_offset, tile_swizzle.h).
template <class Tr>
__device__ __forceinline__ std::uint32_t swizzle(int row, int chunk) {
  return swizzled_offset(row, chunk, Tr::kHeadDim, Tr::kSwizzle8);
}

// The cp.async share of one thread in a [rows][kHeadDim] tile: one fixed 16-byte chunk column
// (and the kCopyGroups - 1 others kCopyWidth chunks after it) of every kRowsPerPass-th row from
// row0. kRowsPerPass is a multiple of 8 and kCopyWidth of the swizzle group, so the swizzle is the
// same on every copy: the shared address is one register plus an immediate and the global one a
// pointer advanced by a 32-bit step (the launcher checks kBlockN·stride < 2³¹). rows_left: the
// rows valid minus this thread's row0; chunks_left: the head dim's chunks minus this thread's
// column — chunks past the head dim are zero-filled like rows past the sequence.
// (Version 4: the old loop recomputed row and chunk per copy and ptxas kept a 64-bit pointer per
// copy live across the key loop.)
template <class Tr, int kRows, class T>
__device__ __forceinline__ void copy_tile(std::uint32_t smem, const T* src, int step, int rows_left, int chunks_left,
                                          const void* any) {
  constexpr int kRowsPerPass = Tr::kThreads / Tr::kCopyWidth;
  static_assert(kRows % kRowsPerPass == 0, "whole passes");
  if constexpr (Tr::kCopyGroups == 1) rows_left = chunks_left > 0 ? rows_left : 0;
#pragma unroll
  for (int pass = 0; pass < kRows / kRowsPerPass; ++pass) {
#pragma unroll
    for (int g = 0; g < Tr::kCopyGroups; ++g) {
      const bool valid = pass * kRowsPerPass < rows_left && (Tr::kCopyGroups == 1 || g * Tr::kCopyWidth < chunks_left);
      // A zero-filled copy reads nothing, but its address stays inside the tensor (`any`, a kernel
      // parameter: no register) rather than past its end.
      cp_async_16(smem + pass * kRowsPerPass * Tr::kHeadDim * 2 + g * Tr::kCopyWidth * 16,
                  valid ? src + g * Tr::kCopyWidth * 8 : static_cast<const T*>(any), valid);
    }
    src += step;
  }
}

// A thread's shared-memory offsets (bytes) and rows, functions of threadIdx.x and q_start. The
// key loop rebuilds them every tile from fresh_*() (a dozen integer ops) instead of keeping them live: at
// 32 rows per warp the accumulators take ~200 of the 255 registers, and ptxas spilled with them
// held across the loop.
template <class Tr>
struct ThreadOffsets {
  int lane, copy_row0;
  int copy_chunks_left;        // head-dim chunks from this thread's copy column on (copy_tile)
  int warp_first_row;          // q_start + the warp's first row in the CTA
  std::uint32_t copy;          // cp.async target of (copy_row0, this thread's chunk) in a tile
  std::uint32_t q, k, v;       // ldmatrix lane offsets at k-step 0 (XOR part), see the kernel
  std::uint32_t q_row, k_row, v_row;  // the rows' part of them where rows are not a power of two, else 0
  __device__ __forceinline__ ThreadOffsets(int tid, int q_start, int head_chunks) {
    lane = tid % 32;
    warp_first_row = q_start + (tid / 32) * Tr::kRowsPerWarp;
    copy_row0 = tid / Tr::kCopyWidth;
    copy_chunks_left = head_chunks - tid % Tr::kCopyWidth;
    copy = swizzle<Tr>(copy_row0, tid % Tr::kCopyWidth);
    // The lane offsets of tile_swizzle.h: Q as the A operand (+ mt·16 rows, k-step ks: ^ (ks << 5)),
    // K as B (+ nt·8 rows), V as B through .trans (+ kp·16 rows; chunk dt: ^ (dt << 4)). With
    // power-of-two rows the K and V regions join the XOR part (their bits lie above the chunk
    // bits); otherwise they join the row part, added to the base outside the XOR.
    const LaneOffset q_lane = a_operand_lane<Tr::kHeadDim>(lane, (tid / 32) * Tr::kRowsPerWarp);
    const LaneOffset k_lane = b_operand_lane<Tr::kHeadDim>(lane);
    const LaneOffset v_lane = bt_operand_lane<Tr::kHeadDim>(lane);
    q = q_lane.chunk;
    q_row = q_lane.row_bytes;
    if constexpr (Tr::kPow2Row) {
      k = k_lane.chunk + Tr::kOffK;
      v = v_lane.chunk + Tr::kOffV;
      k_row = 0;
      v_row = 0;
    } else {
      k = k_lane.chunk;
      v = v_lane.chunk;
      k_row = k_lane.row_bytes + Tr::kOffK;
      v_row = v_lane.row_bytes + Tr::kOffV;
    }
  }
};

// The minimum-CTAs bound is a Hopper tuning (sm_90a has 0 spills under it); sm_80 builds without it.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define ATTNPROF_ATTENTION_MIN_BLOCKS(Tr) 0
#else
#define ATTNPROF_ATTENTION_MIN_BLOCKS(Tr) Tr::kMinBlocksPerSm
#endif
template <class Tr, class T>
__global__ void __launch_bounds__(Tr::kThreads, ATTNPROF_ATTENTION_MIN_BLOCKS(Tr))
    attention_forward_kernel(FusedAttentionArgs args, BlockSchedule schedule) {
  using Mma = MmaType<T>;
  constexpr int kRowBytes = Tr::kHeadDim * 2;
  constexpr int kRowsPerPass = Tr::kThreads / Tr::kCopyWidth;
  constexpr std::uint32_t kOffK = Tr::kOffK, kOffV = Tr::kOffV;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  const std::uint32_t smem = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw));

  int m_block, bh;
  schedule.coords(m_block, bh, static_cast<int>(blockIdx.x));
  const int b = bh / static_cast<int>(args.heads), h = bh % static_cast<int>(args.heads);
  const int kvh = h / static_cast<int>(args.heads / args.kv_heads);
  const int seq_q = static_cast<int>(args.seq_q), seq_k = static_cast<int>(args.seq_k);
  const int q_start = m_block * Tr::kBlockM;
  // Causal: row i sees key j iff j <= i + offset (the launcher clamps offset to [-seq_q, seq_k]).
  const int offset = static_cast<int>(args.causal_offset);

  // Key tiles this CTA needs: up to the last key its last row sees (none when every row is masked).
  int n_blocks = (seq_k + Tr::kBlockN - 1) / Tr::kBlockN;
  if (args.causal) {
    const int rows_end = min(q_start + Tr::kBlockM, seq_q);  // rows past Sq are not stored
    n_blocks = min(n_blocks, max(0, (rows_end + offset + Tr::kBlockN - 1) / Tr::kBlockN));
  }

  // This thread's cp.async chunk column and first row (same in Q, K and V tiles).
  const int head_chunks = static_cast<int>(args.head_dim) / 8;  // ≤ kChunksPerRow (the launcher checks)
  const ThreadOffsets<Tr> prologue(threadIdx.x, q_start, head_chunks);
  const int copy_row0 = prologue.copy_row0, copy_chunk = threadIdx.x % Tr::kCopyWidth;
  const std::uint32_t copy_smem = smem + prologue.copy;
  {
    const int stride = static_cast<int>(args.q_stride[2]);
    const T* q = static_cast<const T*>(args.q) + b * args.q_stride[0] + h * args.q_stride[1] +
                 static_cast<std::int64_t>(q_start + copy_row0) * stride + copy_chunk * 8;
    copy_tile<Tr, Tr::kBlockM>(copy_smem, q, kRowsPerPass * stride, seq_q - q_start - copy_row0,
                               prologue.copy_chunks_left, args.q);
  }
  const T* k_src = static_cast<const T*>(args.k) + b * args.k_stride[0] + kvh * args.k_stride[1] +
                   copy_row0 * args.k_stride[2] + copy_chunk * 8;
  const T* v_src = static_cast<const T*>(args.v) + b * args.v_stride[0] + kvh * args.v_stride[1] +
                   copy_row0 * args.v_stride[2] + copy_chunk * 8;
  if (n_blocks > 0) {
    copy_tile<Tr, Tr::kBlockN>(copy_smem + kOffK, k_src, kRowsPerPass * static_cast<int>(args.k_stride[2]),
                               seq_k - copy_row0, prologue.copy_chunks_left, args.k);
    copy_tile<Tr, Tr::kBlockN>(copy_smem + kOffV, v_src, kRowsPerPass * static_cast<int>(args.v_stride[2]),
                               seq_k - copy_row0, prologue.copy_chunks_left, args.v);
  }
  cp_async_commit();
  const std::uint32_t coords_addr = smem + Tr::kOffCoords;
  if (threadIdx.x == 0)
    asm volatile("st.shared.v4.u32 [%0], {%1,%2,%3,%4};\n" ::"r"(coords_addr), "r"(q_start), "r"(bh), "r"(offset), "r"(seq_k));
  __syncthreads();  // the coordinates are visible to every thread

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

  std::uint32_t q_frag[Tr::kQInRegisters ? Tr::kMTiles : 1][Tr::kQInRegisters ? Tr::kKSteps : 1][4];
  if constexpr (Tr::kQInRegisters) {
    cp_async_wait_all();
    __syncthreads();
#pragma unroll
    for (int ks = 0; ks < Tr::kKSteps; ++ks)
#pragma unroll
      for (int mt = 0; mt < Tr::kMTiles; ++mt) ldmatrix_x4<false>(q_frag[mt][ks], smem + prologue.q_row, prologue.q, ks << 5, mt * 16 * kRowBytes);
  }

  std::uint32_t stage = 0;  // byte offset of this tile's K/V buffers (even tiles 0, odd kSmemKV)
  for (int n_block = 0; n_block < n_blocks; ++n_block) {
    const ThreadOffsets<Tr> my(fresh_tid(), 0, static_cast<int>(args.head_dim) / 8);
    const std::uint32_t copy_dst = smem + my.copy;
    const int k_step = kRowsPerPass * static_cast<int>(args.k_stride[2]);
    const int v_step = kRowsPerPass * static_cast<int>(args.v_stride[2]);
    if constexpr (Tr::kPipelined) {
      cp_async_wait_all();
      __syncthreads();  // tile n_block is visible; every warp is done with tile n_block-1's buffers
      if (n_block + 1 < n_blocks) {
        const int rows_left = seq_k - (n_block + 1) * Tr::kBlockN - my.copy_row0;
        k_src += k_step * (Tr::kBlockN / kRowsPerPass);
        v_src += v_step * (Tr::kBlockN / kRowsPerPass);
        copy_tile<Tr, Tr::kBlockN>(copy_dst + (stage ^ Tr::kSmemKV) + kOffK, k_src, k_step, rows_left,
                                   my.copy_chunks_left, args.k);
        copy_tile<Tr, Tr::kBlockN>(copy_dst + (stage ^ Tr::kSmemKV) + kOffV, v_src, v_step, rows_left,
                                   my.copy_chunks_left, args.v);
        cp_async_commit();
      }
    } else {
      if (n_block > 0) {
        __syncthreads();  // every warp is done with the previous tile
        const int rows_left = seq_k - n_block * Tr::kBlockN - my.copy_row0;
        k_src += k_step * (Tr::kBlockN / kRowsPerPass);
        v_src += v_step * (Tr::kBlockN / kRowsPerPass);
        copy_tile<Tr, Tr::kBlockN>(copy_dst + kOffK, k_src, k_step, rows_left, my.copy_chunks_left, args.k);
        copy_tile<Tr, Tr::kBlockN>(copy_dst + kOffV, v_src, v_step, rows_left, my.copy_chunks_left, args.v);
        cp_async_commit();
      }
      cp_async_wait_all();
      __syncthreads();
    }
    const std::uint32_t smem_kv = smem + stage;
    if constexpr (Tr::kPipelined) stage = (n_block & 1) ? 0 : Tr::kSmemKV;  // the next tile's
    // Causal: a warp none of whose rows sees any key of this tile (the upper warps' part of the
    // diagonal when kBlockN < kBlockM) skips it: its P would be all zeros. Warp-uniform.
    const int n_start = n_block * Tr::kBlockN;
    if (Tr::kBlockN < Tr::kBlockM && args.causal &&
        n_start > read_q_start(smem + Tr::kOffCoords) + my.warp_first_row + Tr::kRowsPerWarp - 1 + read_slot(smem + Tr::kOffCoords + 8))
      continue;

    // S = Q · Kᵀ for this warp's rows and the tile's kBlockN keys. Each K fragment (ldmatrix.x4)
    // feeds 2·kMTiles MMAs: with 32 rows per warp the shared-memory traffic per MMA halves.
    float acc_s[Tr::kMTiles][Tr::kNTiles][4];  // written by the first k-step's MMAs (C = 0)
#pragma unroll
    for (int ks = 0; ks < Tr::kKSteps; ++ks) {
      std::uint32_t a[Tr::kMTiles][4];
#pragma unroll
      for (int mt = 0; mt < Tr::kMTiles; ++mt) {
        if constexpr (Tr::kQInRegisters) {
#pragma unroll
          for (int i = 0; i < 4; ++i) a[mt][i] = q_frag[mt][ks][i];
        } else {
          ldmatrix_x4<false>(a[mt], smem + my.q_row, my.q, ks << 5, mt * 16 * kRowBytes);
        }
      }
#pragma unroll
      for (int nt = 0; nt < Tr::kNTiles; nt += 2) {
        std::uint32_t bk[4];
        ldmatrix_x4<false>(bk, smem_kv + my.k_row, my.k, ks << 5, nt * 8 * kRowBytes);
#pragma unroll
        for (int mt = 0; mt < Tr::kMTiles; ++mt) {
          if (ks == 0) {
            Mma::mma_first(acc_s[mt][nt], a[mt], bk[0], bk[1]);
            Mma::mma_first(acc_s[mt][nt + 1], a[mt], bk[2], bk[3]);
          } else {
            Mma::mma(acc_s[mt][nt], a[mt], bk[0], bk[1]);
            Mma::mma(acc_s[mt][nt + 1], a[mt], bk[2], bk[3]);
          }
        }
      }
    }

    // Mask only where needed: the Sk tail, and (causal) tiles reaching past the last key this
    // warp's first row sees. One integer limit per row; the column offsets are immediates.
    const int warp_first_row = read_q_start(smem + Tr::kOffCoords) + my.warp_first_row;
    const int diagonal = read_slot(smem + Tr::kOffCoords + 8);  // = offset, re-read (registers)
    const bool needs_mask = n_start + Tr::kBlockN > seq_k ||
                            (args.causal && n_start + Tr::kBlockN - 1 > warp_first_row + diagonal);
    if (needs_mask) {
      const int tail_limit = seq_k - n_start - (my.lane % 4) * 2;
#pragma unroll
      for (int mt = 0; mt < Tr::kMTiles; ++mt)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          // Keys seen by this thread's row, minus the tile start and the thread's first column.
          const int causal_limit =
              warp_first_row + my.lane / 4 + mt * 16 + half * 8 + diagonal + 1 - n_start - (my.lane % 4) * 2;
          const int limit = args.causal ? min(tail_limit, causal_limit) : tail_limit;
#pragma unroll
          for (int nt = 0; nt < Tr::kNTiles; ++nt) {
            if (nt * 8 >= limit) acc_s[mt][nt][half * 2] = -INFINITY;
            if (nt * 8 + 1 >= limit) acc_s[mt][nt][half * 2 + 1] = -INFINITY;
          }
        }
    }

    // Online softmax in base 2, P = exp2(S·c − m·c) with one FFMA before MUFU.EX2; max and sum over
    // the 4 threads of a row with two shuffles. Lazy rescaling (as FlashAttention-4): m is a row's
    // reference max, moved (and O and the sum rescaled) only when some row of the warp sees its max
    // grow by more than kRescaleLog2 — a vote and a warp-uniform branch per row slot. Otherwise P
    // stays ≤ 2^kRescaleLog2 (exact in bf16/fp16 up to their usual rounding; the sums are fp32) and
    // O, the sum and the LSE stay consistent, all relative to the same m. With scores of typical
    // size the max settles in the first tile and the kDTiles·2 FMULs per row are skipped after it.
    constexpr float kRescaleLog2 = 8.0f;
#pragma unroll
    for (int mt = 0; mt < Tr::kMTiles; ++mt)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        float mx = acc_s[mt][0][half * 2];
#pragma unroll
        for (int nt = 0; nt < Tr::kNTiles; ++nt)
          mx = fmaxf(mx, fmaxf(acc_s[mt][nt][half * 2], acc_s[mt][nt][half * 2 + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        // -inf - -inf (nothing seen yet, nothing in this tile) is NaN: false, as it should be;
        // finite - -inf (the first keys) is +inf: true. One vote per row slot, so only one max is
        // live at a time; the exp2 and P·V below stay one branch-free block for the scheduler.
        if (__any_sync(0xffffffffu, (mx - row_max[mt][half]) * scale_log2 > kRescaleLog2)) {
          const float m = fmaxf(row_max[mt][half], mx);
          // A row that has seen no key keeps m = -inf; its scaled max is taken as 0 so exp2 gives 0, not NaN.
          const float rescale = fast_exp2(row_max[mt][half] * scale_log2 - (m == -INFINITY ? 0.0f : m * scale_log2));
          row_max[mt][half] = m;
          row_sum[mt][half] *= rescale;
#pragma unroll
          for (int dt = 0; dt < Tr::kDTiles; ++dt) {
            acc_o[mt][dt][half * 2] *= rescale;
            acc_o[mt][dt][half * 2 + 1] *= rescale;
          }
        }
      }
#pragma unroll
    for (int mt = 0; mt < Tr::kMTiles; ++mt)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const float max_scaled = row_max[mt][half] == -INFINITY ? 0.0f : row_max[mt][half] * scale_log2;
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
        ldmatrix_x4<true>(bv, smem_kv + my.v_row, my.v, dt << 4, kp * 16 * kRowBytes);
#pragma unroll
        for (int mt = 0; mt < Tr::kMTiles; ++mt) {
          Mma::mma(acc_o[mt][dt], a[mt], bv[0], bv[1]);
          Mma::mma(acc_o[mt][dt + 1], a[mt], bv[2], bv[3]);
        }
      }
    }
  }

  // Epilogue: O /= row sum; LSE; O through this warp's own Q rows in shared memory. Rows that saw
  // no key (sum 0) come out as zeros with LSE -inf. Indices recomputed (fresh_*), see above.
  // With no key tile at all the Q copy may still be in flight, and a thread's copies cover other
  // warps' rows (fixed chunk columns): every thread waits for its own, then the CTA syncs, before
  // any warp writes O over its Q rows (racecheck on the H200 caught __syncwarp here).
  cp_async_wait_all();
  __syncthreads();
  {
    const int tid = fresh_tid(), e_lane = tid % 32, e_row0 = (tid / 32) * Tr::kRowsPerWarp;
    int e_q_start, e_bh;
    read_coords(e_q_start, e_bh, smem + Tr::kOffCoords);
    const int e_b = e_bh / static_cast<int>(args.heads), e_h = e_bh % static_cast<int>(args.heads);
    const int e_seq_q = static_cast<int>(args.seq_q), e_head_chunks = static_cast<int>(args.head_dim) / 8;
#pragma unroll
    for (int mt = 0; mt < Tr::kMTiles; ++mt) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        float sum = row_sum[mt][half];
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        sum += __shfl_xor_sync(0xffffffffu, sum, 2);
        const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
        const int row = e_row0 + mt * 16 + e_lane / 4 + half * 8;
        if (args.lse != nullptr && e_lane % 4 == 0 && e_q_start + row < e_seq_q) {
          float lse = sum > 0.0f ? row_max[mt][half] * args.softmax_scale + logf(sum) : -INFINITY;
          args.lse[(static_cast<std::int64_t>(e_b) * args.heads + e_h) * args.seq_q + e_q_start + row] = lse;
        }
#pragma unroll
        for (int dt = 0; dt < Tr::kDTiles; ++dt) {
          std::uint32_t packed = Mma::pack(acc_o[mt][dt][half * 2] * inv, acc_o[mt][dt][half * 2 + 1] * inv);
          std::uint32_t addr = smem + swizzle<Tr>(row, dt) + (e_lane % 4) * 4;
          asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(packed));
        }
      }
    }
    __syncwarp();
    T* o = static_cast<T*>(args.o) + e_b * args.o_stride[0] + e_h * args.o_stride[1];
    for (int i = e_lane; i < Tr::kRowsPerWarp * Tr::kChunksPerRow; i += 32) {
      int row = e_row0 + i / Tr::kChunksPerRow, chunk = i % Tr::kChunksPerRow;
      if (e_q_start + row >= e_seq_q || chunk >= e_head_chunks) continue;  // only the real rows and columns
      uint4 value;
      std::uint32_t addr = smem + swizzle<Tr>(row, chunk);
      asm volatile("ld.shared.v4.b32 {%0,%1,%2,%3}, [%4];\n"
                   : "=r"(value.x), "=r"(value.y), "=r"(value.z), "=r"(value.w)
                   : "r"(addr));
      *reinterpret_cast<uint4*>(o + (e_q_start + row) * args.o_stride[2] + chunk * 8) = value;
    }
  }
}

}  // namespace attnprof::cuda::attention
