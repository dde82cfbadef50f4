// Row-wise kernels over the last dim: softmax, the fused scale+causal-mask+softmax pass
// (torch.compile's kernel for the `fused` variant), the softmax's backward and all(). The causal mask keeps column j of
// query row i iff j <= i + causal_offset (0 top-left, Sk − Sq bottom-right); a row that keeps no
// column (bottom-right, Sq > Sk) is written as zeros, while plain softmax of an all −inf row stays
// NaN (PyTorch's softmax, which naive relies on).
//
// Tiling: a row lives in registers. Rows up to 32·V·4 elements take one warp each (4 rows per
// 128-thread block); longer rows take a 512-thread block, up to 512·V·8 elements (32768 bf16,
// 16384 fp32). Each thread holds kVecs 16-byte vectors; max and sum reduce by warp shuffles (and
// shared memory across warps). One read and one write per element. Rows longer than that, or
// unaligned, run a 3-pass fallback kernel (correct, not fast).
// FLOPs: ~5 per element (scale, max, sub, exp, div). Bytes: 2·rows·cols·sizeof(T).
// Registers (ptxas sm_90a): 18–96 per instantiation, 0 spills.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include <attnprof/error.h>


#include "cuda/check.h"
#include "cuda/device_types.cuh"
#include "cuda/kernels.h"
#include "cuda/str_cat.h"

namespace attnprof::cuda {
namespace {

constexpr float kLog2e = 1.4426950408889634f;

struct RowGeometry {
  FastDivmod rows_per_head, heads;  // dims 2 and 1 of the rank-4 view
  std::uint32_t rows;
  std::uint32_t cols;
  std::int64_t src_stride[3], dst_stride[3];
};

// Columns 0..kept-1 of query row `query_row` survive the mask.
__device__ __forceinline__ std::uint32_t kept_columns(std::uint32_t query_row, std::uint32_t cols, bool causal,
                                                      std::int64_t causal_offset) {
  if (!causal) return cols;
  const std::int64_t reach = static_cast<std::int64_t>(query_row) + 1 + causal_offset;
  return reach <= 0 ? 0u : (reach >= static_cast<std::int64_t>(cols) ? cols : static_cast<std::uint32_t>(reach));
}

__device__ __forceinline__ void row_offsets(const RowGeometry& g, std::uint32_t row, std::int64_t& src_off,
                                            std::int64_t& dst_off, std::uint32_t& query_row) {
  std::uint32_t rest, r, b, h;
  g.rows_per_head.divmod(rest, r, row);
  g.heads.divmod(b, h, rest);
  src_off = b * g.src_stride[0] + h * g.src_stride[1] + r * g.src_stride[2];
  dst_off = b * g.dst_stride[0] + h * g.dst_stride[1] + r * g.dst_stride[2];
  query_row = r;
}

template <int kWarps>
__device__ __forceinline__ float group_max(float v, float* scratch) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  if constexpr (kWarps > 1) {
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    __syncthreads();  // scratch may still be read by the previous reduction
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = scratch[0];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) v = fmaxf(v, scratch[w]);
  }
  return v;
}

template <int kWarps>
__device__ __forceinline__ float group_sum(float v, float* scratch) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if constexpr (kWarps > 1) {
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) v += scratch[w];
  }
  return v;
}

// kWarpsPerRow = 1: each warp of the block takes its own row; otherwise the block takes one row.
template <class T, int kVecs, int kWarpsPerRow>
__global__ void softmax_rows_kernel(T* dst, const T* src, RowGeometry g, float scale, bool causal,
                                    std::int64_t causal_offset) {
  constexpr int V = 16 / sizeof(T);
  constexpr int kThreadsPerRow = 32 * kWarpsPerRow;
  __shared__ float scratch[kWarpsPerRow];
  const int lane_in_row = kWarpsPerRow == 1 ? threadIdx.x % 32 : threadIdx.x;
  const std::uint32_t row = kWarpsPerRow == 1 ? blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32 : blockIdx.x;
  if (row >= g.rows) return;  // whole warps leave together (kWarpsPerRow == 1 only)
  std::int64_t src_off, dst_off;
  std::uint32_t query_row;
  row_offsets(g, row, src_off, dst_off, query_row);
  const std::uint32_t kept = kept_columns(query_row, g.cols, causal, causal_offset);

  float x[kVecs][V];
  float row_max = -INFINITY;
#pragma unroll
  for (int j = 0; j < kVecs; ++j) {
    std::uint32_t col = (j * kThreadsPerRow + lane_in_row) * V;
    if (col < g.cols) {
      load_floats<T, V>(x[j], src + src_off + col);
    }
#pragma unroll
    for (int i = 0; i < V; ++i) {
      x[j][i] = (col + i < kept) ? x[j][i] * scale : -INFINITY;
      row_max = fmaxf(row_max, x[j][i]);
    }
  }
  row_max = group_max<kWarpsPerRow>(row_max, scratch);
  float row_sum = 0.0f;
  // kept == 0: every x is −inf; subtracting 0 (not −inf) makes each exp 0 instead of NaN
  const float max_log2 = kept == 0 ? 0.0f : row_max * kLog2e;
#pragma unroll
  for (int j = 0; j < kVecs; ++j) {
#pragma unroll
    for (int i = 0; i < V; ++i) {
      x[j][i] = exp2f(x[j][i] * kLog2e - max_log2);
      row_sum += (j * kThreadsPerRow + lane_in_row) * V + i < g.cols ? x[j][i] : 0.0f;
    }
  }
  row_sum = group_sum<kWarpsPerRow>(row_sum, scratch);
  const float inv_sum = kept == 0 ? 0.0f : 1.0f / row_sum;
#pragma unroll
  for (int j = 0; j < kVecs; ++j) {
    std::uint32_t col = (j * kThreadsPerRow + lane_in_row) * V;
    if (col < g.cols) {
#pragma unroll
      for (int i = 0; i < V; ++i) x[j][i] *= inv_sum;
      store_floats<T, V>(dst + dst_off + col, x[j]);
    }
  }
}

// Any row length, any alignment: three passes over the row (max, sum, write), one block per row.
template <class T>
__global__ void softmax_rows_fallback_kernel(T* dst, const T* src, RowGeometry g, std::int64_t src_col_stride,
                                             std::int64_t dst_col_stride, float scale, bool causal,
                                             std::int64_t causal_offset) {
  __shared__ float scratch[8];
  std::int64_t src_off, dst_off;
  std::uint32_t query_row;
  row_offsets(g, blockIdx.x, src_off, dst_off, query_row);
  const std::uint32_t kept = kept_columns(query_row, g.cols, causal, causal_offset);  // 0: the row is all zeros
  float row_max = -INFINITY;
  for (std::uint32_t c = threadIdx.x; c < kept; c += blockDim.x)
    row_max = fmaxf(row_max, to_float(src[src_off + c * src_col_stride]) * scale);
  row_max = group_max<8>(row_max, scratch);
  float row_sum = 0.0f;
  for (std::uint32_t c = threadIdx.x; c < kept; c += blockDim.x)
    row_sum += exp2f((to_float(src[src_off + c * src_col_stride]) * scale - row_max) * kLog2e);
  row_sum = group_sum<8>(row_sum, scratch);
  for (std::uint32_t c = threadIdx.x; c < g.cols; c += blockDim.x) {
    float p = c < kept ? exp2f((to_float(src[src_off + c * src_col_stride]) * scale - row_max) * kLog2e) / row_sum : 0.0f;
    dst[dst_off + c * dst_col_stride] = from_float<T>(p);
  }
}

template <class T>
void launch_softmax_typed(const TensorArg& dst, const TensorArg& src, float scale, bool causal,
                          std::int64_t causal_offset, cudaStream_t stream) {
  constexpr int V = 16 / sizeof(T);
  std::int64_t rows = dst.shape[0] * dst.shape[1] * dst.shape[2];
  std::int64_t cols = dst.shape[3];
  if (rows == 0 || cols == 0) return;
  if (rows >= (std::int64_t{1} << 31)) throw Error(str_cat("cuda softmax: ", rows, " rows exceed the kernel's index"));
  RowGeometry g{FastDivmod(static_cast<std::uint32_t>(dst.shape[2])), FastDivmod(static_cast<std::uint32_t>(dst.shape[1])),
                static_cast<std::uint32_t>(rows), static_cast<std::uint32_t>(cols),
                {src.stride[0], src.stride[1], src.stride[2]}, {dst.stride[0], dst.stride[1], dst.stride[2]}};
  T* out = static_cast<T*>(dst.ptr);
  const T* in = static_cast<const T*>(src.ptr);
  auto aligned = [&](const TensorArg& a) {
    return a.stride[3] == 1 && cols % V == 0 && reinterpret_cast<std::uintptr_t>(a.ptr) % 16 == 0 &&
           a.stride[0] % V == 0 && a.stride[1] % V == 0 && a.stride[2] % V == 0;
  };
  const unsigned grid_rows = static_cast<unsigned>(rows);
  if (aligned(dst) && aligned(src)) {
    if (cols <= 32 * V) {
      softmax_rows_kernel<T, 1, 1><<<(grid_rows + 3) / 4, 128, 0, stream>>>(out, in, g, scale, causal, causal_offset);
      ATTNPROF_CUDA_CHECK_LAUNCH("softmax_rows_kernel");
      return;
    }
    if (cols <= 32 * V * 4) {
      softmax_rows_kernel<T, 4, 1><<<(grid_rows + 3) / 4, 128, 0, stream>>>(out, in, g, scale, causal, causal_offset);
      ATTNPROF_CUDA_CHECK_LAUNCH("softmax_rows_kernel");
      return;
    }
    if (cols <= 512 * V * 2) {
      softmax_rows_kernel<T, 2, 16><<<grid_rows, 512, 0, stream>>>(out, in, g, scale, causal, causal_offset);
      ATTNPROF_CUDA_CHECK_LAUNCH("softmax_rows_kernel");
      return;
    }
    if (cols <= 512 * V * 8) {
      softmax_rows_kernel<T, 8, 16><<<grid_rows, 512, 0, stream>>>(out, in, g, scale, causal, causal_offset);
      ATTNPROF_CUDA_CHECK_LAUNCH("softmax_rows_kernel");
      return;
    }
  }
  softmax_rows_fallback_kernel<T><<<grid_rows, 256, 0, stream>>>(out, in, g, src.stride[3], dst.stride[3], scale, causal,
                                                                         causal_offset);
  ATTNPROF_CUDA_CHECK_LAUNCH("softmax_rows_fallback_kernel");
}

void launch_softmax_any(const TensorArg& dst, const TensorArg& src, float scale, bool causal,
                        std::int64_t causal_offset, cudaStream_t stream, const char* what) {
  if (dst.shape != src.shape) throw Error(str_cat("cuda ", what, ": dst and src shapes differ"));
  if (dst.dtype != src.dtype)
    throw Error(str_cat("cuda ", what, ": dst dtype ", dtype_name(dst.dtype), " differs from src dtype ", dtype_name(src.dtype)));
  switch (dst.dtype) {
    case DType::fp32: launch_softmax_typed<float>(dst, src, scale, causal, causal_offset, stream); return;
    case DType::bf16: launch_softmax_typed<__nv_bfloat16>(dst, src, scale, causal, causal_offset, stream); return;
    case DType::fp16: launch_softmax_typed<__half>(dst, src, scale, causal, causal_offset, stream); return;
    default: throw Error(str_cat("cuda ", what, ": dtype ", dtype_name(dst.dtype), " is not supported (bf16, fp16, fp32)"));
  }
}

// The softmax's backward, one 256-thread block per row, two passes: the row's Σ grad·probs, then
// dst = scale · probs · (grad − Σ). dst may alias grad: each thread reads an element in the second
// pass before it writes it, and the first pass has ended (the reduction's barriers) by then.
// Strided (any layout); a backward's S×S tensors are contiguous. FLOPs: 4 per element. Bytes: two
// reads of grad and probs, one write. Registers (ptxas): 14 (sm_80), 22 (sm_90a), 0 spills.
template <class T>
__global__ void softmax_backward_kernel(T* dst, const T* grad, const T* probs, RowGeometry grad_to_dst,
                                        RowGeometry probs_rows, std::int64_t grad_col_stride,
                                        std::int64_t probs_col_stride, std::int64_t dst_col_stride, float scale) {
  __shared__ float scratch[8];
  std::int64_t grad_off, dst_off, probs_off, unused_off;
  std::uint32_t unused_row;
  row_offsets(grad_to_dst, blockIdx.x, grad_off, dst_off, unused_row);
  row_offsets(probs_rows, blockIdx.x, probs_off, unused_off, unused_row);
  float dot = 0.0f;
  for (std::uint32_t c = threadIdx.x; c < grad_to_dst.cols; c += blockDim.x) {
    dot += to_float(grad[grad_off + c * grad_col_stride]) * to_float(probs[probs_off + c * probs_col_stride]);
  }
  dot = group_sum<8>(dot, scratch);
  for (std::uint32_t c = threadIdx.x; c < grad_to_dst.cols; c += blockDim.x) {
    const float p = to_float(probs[probs_off + c * probs_col_stride]);
    const float g = to_float(grad[grad_off + c * grad_col_stride]);
    dst[dst_off + c * dst_col_stride] = from_float<T>(scale * p * (g - dot));
  }
}

// The softmax's backward on contiguous, 16-byte aligned rows of at most 2048 vectors (16384 bf16
// columns): one block per row, each thread holding its kVecs vectors of grad and probs in
// registers between the reduction of Σ grad·probs and the write, so each element is read once
// (three accesses an element against the two-pass kernel's five). dst may alias grad (each thread
// writes only what it read). Block: the row's vectors / kVecs, rounded up to whole warps: kVecs 2
// up to 512 vectors (at most 256 threads), 4 past that (at most 512 threads, 8 loads in flight a
// thread), two blocks an SM by the launch bounds, so one block's reduction and stores overlap the
// other's loads (bench/RESULTS.md). Registers (ptxas sm_90a): 30–54; bf16 with 4 vectors 64 and a
// 20-byte spill (to L1; the rows are memory bound).
constexpr int kBackwardShortVecs = 2, kBackwardLongVecs = 4;
constexpr int kBackwardShortThreads = 256, kBackwardLongThreads = 512;
template <class T, int kBackwardVecs, int kMaxThreads>
__global__ void __launch_bounds__(kMaxThreads, 2)
    softmax_backward_rows_kernel(T* dst, const T* grad, const T* probs, RowGeometry grad_to_dst,
                                             RowGeometry probs_rows, float scale) {
  constexpr int V = 16 / sizeof(T);
  __shared__ float scratch[32];
  std::int64_t grad_off, dst_off, probs_off, unused_off;
  std::uint32_t unused_row;
  row_offsets(grad_to_dst, blockIdx.x, grad_off, dst_off, unused_row);
  row_offsets(probs_rows, blockIdx.x, probs_off, unused_off, unused_row);
  const std::uint32_t vectors = grad_to_dst.cols / V;
  uint4 g[kBackwardVecs], p[kBackwardVecs];
  float dot = 0.0f;
#pragma unroll
  for (int i = 0; i < kBackwardVecs; ++i) {
    const std::uint32_t v = threadIdx.x + i * blockDim.x;
    if (v < vectors) {
      g[i] = *reinterpret_cast<const uint4*>(grad + grad_off + static_cast<std::int64_t>(v) * V);
      p[i] = *reinterpret_cast<const uint4*>(probs + probs_off + static_cast<std::int64_t>(v) * V);
      const T* ge = reinterpret_cast<const T*>(&g[i]);
      const T* pe = reinterpret_cast<const T*>(&p[i]);
#pragma unroll
      for (int e = 0; e < V; ++e) dot += to_float(ge[e]) * to_float(pe[e]);
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
  const int warps = static_cast<int>(blockDim.x / 32);
  if (warps > 1) {
    if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = dot;
    __syncthreads();
    dot = 0.0f;
    for (int w = 0; w < warps; ++w) dot += scratch[w];
  }
#pragma unroll
  for (int i = 0; i < kBackwardVecs; ++i) {
    const std::uint32_t v = threadIdx.x + i * blockDim.x;
    if (v < vectors) {
      const T* ge = reinterpret_cast<const T*>(&g[i]);
      const T* pe = reinterpret_cast<const T*>(&p[i]);
      uint4 out;
      T* oe = reinterpret_cast<T*>(&out);
#pragma unroll
      for (int e = 0; e < V; ++e) oe[e] = from_float<T>(scale * to_float(pe[e]) * (to_float(ge[e]) - dot));
      *reinterpret_cast<uint4*>(dst + dst_off + static_cast<std::int64_t>(v) * V) = out;
    }
  }
}

__global__ void all_lastdim_kernel(bool_t* dst, const bool_t* src, RowGeometry g, std::int64_t src_col_stride) {
  const std::uint32_t row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= g.rows) return;
  std::int64_t src_off, dst_off;
  std::uint32_t unused;
  row_offsets(g, row, src_off, dst_off, unused);
  bool all = true;
  for (std::uint32_t c = threadIdx.x % 32; c < g.cols; c += 32) all = all && src[src_off + c * src_col_stride] != 0;
  all = __all_sync(0xffffffffu, all);
  if (threadIdx.x % 32 == 0) dst[dst_off] = all ? 1 : 0;
}

}  // namespace

void launch_softmax_lastdim(const TensorArg& dst, const TensorArg& src, cudaStream_t stream) {
  launch_softmax_any(dst, src, 1.0f, false, 0, stream, "softmax");
}

void launch_scale_mask_softmax(const TensorArg& dst, const TensorArg& src, float scale, bool causal,
                               std::int64_t causal_offset, cudaStream_t stream) {
  launch_softmax_any(dst, src, scale, causal, causal_offset, stream, "scale_mask_softmax");
}

void launch_softmax_backward(const TensorArg& dst, const TensorArg& grad, const TensorArg& probs, float scale,
                             cudaStream_t stream) {
  if (dst.shape != grad.shape || dst.shape != probs.shape) throw Error("cuda softmax_backward: operand shapes differ");
  if (dst.dtype != grad.dtype || dst.dtype != probs.dtype) throw Error("cuda softmax_backward: operand dtypes differ");
  const std::int64_t rows = dst.shape[0] * dst.shape[1] * dst.shape[2];
  if (rows == 0 || dst.shape[3] == 0) return;
  if (rows >= (std::int64_t{1} << 31)) {
    throw Error(str_cat("cuda softmax_backward: ", rows, " rows exceed the kernel's index"));
  }
  auto geometry = [&](const TensorArg& src) {
    return RowGeometry{FastDivmod(static_cast<std::uint32_t>(dst.shape[2])),
                       FastDivmod(static_cast<std::uint32_t>(dst.shape[1])),
                       static_cast<std::uint32_t>(rows),
                       static_cast<std::uint32_t>(dst.shape[3]),
                       {src.stride[0], src.stride[1], src.stride[2]},
                       {dst.stride[0], dst.stride[1], dst.stride[2]}};
  };
  auto launch = [&](auto type) {
    using T = decltype(type);
    const std::int64_t per_vector = 16 / static_cast<std::int64_t>(sizeof(T));
    auto vector_rows = [&](const TensorArg& t) {
      return reinterpret_cast<std::uintptr_t>(t.ptr) % 16 == 0 && t.stride[3] == 1 && t.stride[0] % per_vector == 0 &&
             t.stride[1] % per_vector == 0 && t.stride[2] % per_vector == 0;
    };
    const std::int64_t vectors = dst.shape[3] / per_vector;
    if (dst.shape[3] % per_vector == 0 && vectors <= kBackwardLongThreads * kBackwardLongVecs && vector_rows(dst) &&
        vector_rows(grad) && vector_rows(probs)) {
      const bool short_row = vectors <= kBackwardShortThreads * kBackwardShortVecs;
      const int vecs = short_row ? kBackwardShortVecs : kBackwardLongVecs;
      const auto threads = static_cast<unsigned>((vectors + vecs - 1) / vecs + 31) / 32 * 32;
      const auto kernel =
          short_row ? softmax_backward_rows_kernel<T, kBackwardShortVecs, kBackwardShortThreads>
                    : softmax_backward_rows_kernel<T, kBackwardLongVecs, kBackwardLongThreads>;
      kernel<<<static_cast<unsigned>(rows), threads, 0, stream>>>(static_cast<T*>(dst.ptr),
                                                                  static_cast<const T*>(grad.ptr),
                                                                  static_cast<const T*>(probs.ptr), geometry(grad),
                                                                  geometry(probs), scale);
      ATTNPROF_CUDA_CHECK_LAUNCH("softmax_backward_rows_kernel");
      return;
    }
    softmax_backward_kernel<T><<<static_cast<unsigned>(rows), 256, 0, stream>>>(
        static_cast<T*>(dst.ptr), static_cast<const T*>(grad.ptr), static_cast<const T*>(probs.ptr), geometry(grad),
        geometry(probs), grad.stride[3], probs.stride[3], dst.stride[3], scale);
    ATTNPROF_CUDA_CHECK_LAUNCH("softmax_backward_kernel");
  };
  switch (dst.dtype) {
    case DType::fp32: launch(float{}); return;
    case DType::bf16: launch(__nv_bfloat16{}); return;
    case DType::fp16: launch(__half{}); return;
    default:
      throw Error(str_cat("cuda softmax_backward: dtype ", dtype_name(dst.dtype), " is not supported (bf16, fp16, fp32)"));
  }
}

void launch_all_lastdim(const TensorArg& dst, const TensorArg& src, cudaStream_t stream) {
  if (src.dtype != DType::boolean || dst.dtype != DType::boolean) throw Error("cuda all: operands must be bool");
  if (dst.shape[3] != 1 || dst.shape[0] != src.shape[0] || dst.shape[1] != src.shape[1] || dst.shape[2] != src.shape[2])
    throw Error("cuda all: dst must be src's shape with last dim 1");
  std::int64_t rows = src.shape[0] * src.shape[1] * src.shape[2];
  if (rows == 0) return;
  RowGeometry g{FastDivmod(static_cast<std::uint32_t>(src.shape[2])), FastDivmod(static_cast<std::uint32_t>(src.shape[1])),
                static_cast<std::uint32_t>(rows), static_cast<std::uint32_t>(src.shape[3]),
                {src.stride[0], src.stride[1], src.stride[2]}, {dst.stride[0], dst.stride[1], dst.stride[2]}};
  all_lastdim_kernel<<<static_cast<unsigned>((rows + 7) / 8), 256, 0, stream>>>(
      static_cast<bool_t*>(dst.ptr), static_cast<const bool_t*>(src.ptr), g, src.stride[3]);
  ATTNPROF_CUDA_CHECK_LAUNCH("all_lastdim_kernel");
}

}  // namespace attnprof::cuda
