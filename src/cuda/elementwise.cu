// Elementwise kernels: fill, convert/copy, mul by scalar, add, masked_fill, where, logical_not,
// isneginf, tril/triu, all over the last dim, and the sum over groups of heads (GQA's dK, dV).
//
// Tiling: one thread per vector of V consecutive elements of the last dim, V = 16 bytes / the
// widest element (8 for bf16/fp16, 4 for fp32); a grid-stride loop over all vectors. Operands are
// rank-4 strided views (a broadcast mask is a stride-0 view), decomposed with 32-bit fast divmod.
// When the last dim is not a multiple of V, a stride is not, or a pointer is misaligned, the same
// kernel runs with V = 1.
// FLOPs: ~1 per element. Bytes: each operand read once, dst written once (one pass).
#include <cuda_runtime.h>

#include <attnprof/error.h>

#include <algorithm>
#include <cmath>

#include "cuda/check.h"
#include "cuda/device_types.cuh"
#include "cuda/kernels.h"
#include "cuda/str_cat.h"

namespace attnprof::cuda {
namespace {

template <class T>
struct Operand {
  T* ptr;
  std::int64_t s0, s1, s2, s3;
  __device__ __forceinline__ T* at(std::uint32_t b, std::uint32_t h, std::uint32_t r, std::uint32_t c) const {
    return ptr + (b * s0 + h * s1 + r * s2 + c * s3);
  }
};

// Loads V elements at (b,h,r,c..c+V); an operand broadcast along the last dim (stride 0) is read
// once and repeated (a [.., 1] condition, a scalar zero), so it keeps the 16-byte path for the rest.
template <class T, int V>
__device__ __forceinline__ void load_operand(float (&dst)[V], const Operand<const T>& op, std::uint32_t b, std::uint32_t h,
                                             std::uint32_t r, std::uint32_t c) {
  if (op.s3 == 0) {
    float x = to_float(*op.at(b, h, r, 0));
#pragma unroll
    for (int i = 0; i < V; ++i) dst[i] = x;
  } else {
    load_floats<T, V>(dst, op.at(b, h, r, c));
  }
}

template <class T>
Operand<T> operand(const TensorArg& arg) {
  return Operand<T>{static_cast<T*>(arg.ptr), arg.stride[0], arg.stride[1], arg.stride[2], arg.stride[3]};
}

struct Grid4 {
  FastDivmod cols_in_vectors, rows, heads;  // last dim / V, dim 2, dim 1
  std::uint32_t total_vectors;
};

template <int V, class Op>
__global__ void elementwise_kernel(Op op, Grid4 grid) {
  for (std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < grid.total_vectors; i += gridDim.x * blockDim.x) {
    std::uint32_t rest, col_vec, r, h, b;
    grid.cols_in_vectors.divmod(rest, col_vec, i);
    grid.rows.divmod(rest, r, rest);
    grid.heads.divmod(b, h, rest);
    op.template apply<V>(b, h, r, col_vec * V);
  }
}

// ---- ops: each reads its operands at (b,h,r,c..c+V) and writes dst there.
template <class D, class S>
struct ConvertOp {
  Operand<D> dst;
  Operand<const S> src;
  template <int V>
  __device__ void apply(std::uint32_t b, std::uint32_t h, std::uint32_t r, std::uint32_t c) const {
    float x[V];
    load_operand<S, V>(x, src, b, h, r, c);
    store_floats<D, V>(dst.at(b, h, r, c), x);
  }
};

// dst[b, g] = Σ_{i < group} src[b, g·group + i] (the backward of repeat_interleave over heads), in
// fp32, one rounding into dst. Each thread reads `group` vectors and writes one. Registers
// (ptxas): 32–40 per instantiation, 0 spills.
template <class D, class S>
struct HeadGroupSumOp {
  Operand<D> dst;
  Operand<const S> src;
  std::uint32_t group;
  template <int V>
  __device__ void apply(std::uint32_t b, std::uint32_t h, std::uint32_t r, std::uint32_t c) const {
    float sum[V] = {};
    for (std::uint32_t i = 0; i < group; ++i) {
      float x[V];
      load_operand<S, V>(x, src, b, h * group + i, r, c);
#pragma unroll
      for (int j = 0; j < V; ++j) sum[j] += x[j];
    }
    store_floats<D, V>(dst.at(b, h, r, c), sum);
  }
};

template <class T>
struct FillOp {
  Operand<T> dst;
  float value;
  template <int V>
  __device__ void apply(std::uint32_t b, std::uint32_t h, std::uint32_t r, std::uint32_t c) const {
    float x[V];
#pragma unroll
    for (int i = 0; i < V; ++i) x[i] = value;
    store_floats<T, V>(dst.at(b, h, r, c), x);
  }
};

template <class T>
struct MulScalarOp {
  Operand<T> dst;
  Operand<const T> src;
  float scalar;
  template <int V>
  __device__ void apply(std::uint32_t b, std::uint32_t h, std::uint32_t r, std::uint32_t c) const {
    float x[V];
    load_operand<T, V>(x, src, b, h, r, c);
#pragma unroll
    for (int i = 0; i < V; ++i) x[i] *= scalar;
    store_floats<T, V>(dst.at(b, h, r, c), x);
  }
};

template <class T>
struct AddOp {
  Operand<T> dst;
  Operand<const T> a, b_;
  template <int V>
  __device__ void apply(std::uint32_t b, std::uint32_t h, std::uint32_t r, std::uint32_t c) const {
    float x[V], y[V];
    load_operand<T, V>(x, a, b, h, r, c);
    load_operand<T, V>(y, b_, b, h, r, c);
#pragma unroll
    for (int i = 0; i < V; ++i) x[i] += y[i];
    store_floats<T, V>(dst.at(b, h, r, c), x);
  }
};

template <class T>
struct MaskedFillOp {
  Operand<T> dst;
  Operand<const T> src;
  Operand<const bool_t> mask;
  float value;
  template <int V>
  __device__ void apply(std::uint32_t b, std::uint32_t h, std::uint32_t r, std::uint32_t c) const {
    float x[V], m[V];
    load_operand<T, V>(x, src, b, h, r, c);
    load_operand<bool_t, V>(m, mask, b, h, r, c);
#pragma unroll
    for (int i = 0; i < V; ++i) x[i] = m[i] != 0.0f ? value : x[i];
    store_floats<T, V>(dst.at(b, h, r, c), x);
  }
};

template <class T>
struct WhereOp {
  Operand<T> dst;
  Operand<const bool_t> condition;
  Operand<const T> if_true, if_false;
  template <int V>
  __device__ void apply(std::uint32_t b, std::uint32_t h, std::uint32_t r, std::uint32_t c) const {
    float m[V], x[V], y[V];
    load_operand<bool_t, V>(m, condition, b, h, r, c);
    load_operand<T, V>(x, if_true, b, h, r, c);
    load_operand<T, V>(y, if_false, b, h, r, c);
#pragma unroll
    for (int i = 0; i < V; ++i) x[i] = m[i] != 0.0f ? x[i] : y[i];
    store_floats<T, V>(dst.at(b, h, r, c), x);
  }
};

struct LogicalNotOp {
  Operand<bool_t> dst;
  Operand<const bool_t> src;
  template <int V>
  __device__ void apply(std::uint32_t b, std::uint32_t h, std::uint32_t r, std::uint32_t c) const {
    float x[V];
    load_operand<bool_t, V>(x, src, b, h, r, c);
#pragma unroll
    for (int i = 0; i < V; ++i) x[i] = x[i] != 0.0f ? 0.0f : 1.0f;
    store_floats<bool_t, V>(dst.at(b, h, r, c), x);
  }
};

template <class T>
struct IsNegInfOp {
  Operand<bool_t> dst;
  Operand<const T> src;
  template <int V>
  __device__ void apply(std::uint32_t b, std::uint32_t h, std::uint32_t r, std::uint32_t c) const {
    float x[V];
    load_operand<T, V>(x, src, b, h, r, c);
#pragma unroll
    for (int i = 0; i < V; ++i) x[i] = (isinf(x[i]) && x[i] < 0.0f) ? 1.0f : 0.0f;
    store_floats<bool_t, V>(dst.at(b, h, r, c), x);
  }
};

template <class T>
struct TriangleOp {
  Operand<T> dst;
  Operand<const T> src;
  std::int64_t diagonal;
  bool lower;
  template <int V>
  __device__ void apply(std::uint32_t b, std::uint32_t h, std::uint32_t r, std::uint32_t c) const {
    float x[V];
    load_operand<T, V>(x, src, b, h, r, c);
#pragma unroll
    for (int i = 0; i < V; ++i) {
      std::int64_t offset = static_cast<std::int64_t>(c + i) - static_cast<std::int64_t>(r);  // col - row
      bool keep = lower ? offset <= diagonal : offset >= diagonal;
      x[i] = keep ? x[i] : 0.0f;
    }
    store_floats<T, V>(dst.at(b, h, r, c), x);
  }
};

// ---- host side
bool aligned_for(const TensorArg& arg, int v) {
  if (arg.shape[3] % v != 0) return false;
  if (arg.stride[3] == 0) return true;  // broadcast along the last dim: one scalar load per vector
  if (arg.stride[3] != 1 && arg.shape[3] != 1) return false;
  std::size_t vector_bytes = dtype_size(arg.dtype) * static_cast<std::size_t>(v);
  if (reinterpret_cast<std::uintptr_t>(arg.ptr) % vector_bytes != 0) return false;
  for (int d = 0; d < 3; ++d)
    if (arg.stride[d] % v != 0) return false;
  return true;
}

void require_same_shape(const TensorArg& dst, const TensorArg& other, const char* what) {
  if (dst.shape != other.shape)
    throw Error(str_cat("cuda ", what, ": operand shapes differ ([", dst.shape[0], ",", dst.shape[1], ",", dst.shape[2], ",",
                        dst.shape[3], "] vs [", other.shape[0], ",", other.shape[1], ",", other.shape[2], ",",
                        other.shape[3], "]); the ops layer broadcasts with stride-0 views"));
}

template <int V, class Op>
void launch_op(const Op& op, const TensorArg& dst, cudaStream_t stream) {
  std::int64_t vectors = dst.numel() / V;
  if (vectors == 0) return;
  if (vectors >= (std::int64_t{1} << 32) - 1)
    throw Error(str_cat("cuda elementwise: ", vectors, " vectors exceed the 32-bit index of the kernel"));
  Grid4 grid{FastDivmod(static_cast<std::uint32_t>(dst.shape[3] / V)), FastDivmod(static_cast<std::uint32_t>(dst.shape[2])),
             FastDivmod(static_cast<std::uint32_t>(dst.shape[1])), static_cast<std::uint32_t>(vectors)};
  constexpr int kThreads = 256;
  // Enough blocks to fill 132 SMs several times over; the grid-stride loop covers the rest.
  std::int64_t blocks = std::min<std::int64_t>((vectors + kThreads - 1) / kThreads, 132 * 32);
  elementwise_kernel<V><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(op, grid);
  ATTNPROF_CUDA_CHECK_LAUNCH("elementwise_kernel");
}

// Runs `make_op` with V = kWide when every operand allows it, else V = 1.
template <int kWide, class Op>
void launch_vectorised(const Op& op, const TensorArg& dst, std::initializer_list<const TensorArg*> operands,
                       cudaStream_t stream) {
  bool wide = aligned_for(dst, kWide);
  for (const TensorArg* arg : operands) wide = wide && aligned_for(*arg, kWide);
  if (wide) {
    launch_op<kWide>(op, dst, stream);
  } else {
    launch_op<1>(op, dst, stream);
  }
}

template <class Fn>
void dispatch_float_type(DType dtype, const char* what, Fn&& fn) {
  switch (dtype) {
    case DType::fp32: fn(float{}); return;
    case DType::bf16: fn(__nv_bfloat16{}); return;
    case DType::fp16: fn(__half{}); return;
    default:
      throw Error(str_cat("cuda ", what, ": dtype ", dtype_name(dtype), " is not supported (bf16, fp16, fp32)"));
  }
}

template <class Fn>
void dispatch_value_type(DType dtype, const char* what, Fn&& fn) {
  if (dtype == DType::boolean) {
    fn(bool_t{});
    return;
  }
  dispatch_float_type(dtype, what, fn);
}

template <class T>
constexpr int wide_for() {
  return static_cast<int>(16 / sizeof(T));
}

void require_bool(const TensorArg& arg, const char* what) {
  if (arg.dtype != DType::boolean)
    throw Error(str_cat("cuda ", what, ": the mask/condition must be bool, got ", dtype_name(arg.dtype)));
}

}  // namespace

TensorArg make_arg(const Tensor& tensor) {
  if (tensor.rank() > 4) throw Error(str_cat("cuda: tensors of rank ", tensor.rank(), " are not supported (at most 4)"));
  TensorArg arg;
  arg.ptr = tensor.raw();
  arg.dtype = tensor.dtype();
  int pad = 4 - tensor.rank();
  for (int d = 0; d < tensor.rank(); ++d) {
    arg.shape[pad + d] = tensor.size(d);
    arg.stride[pad + d] = tensor.stride(d);
  }
  return arg;
}

void launch_fill(const TensorArg& dst, double value, cudaStream_t stream) {
  dispatch_value_type(dst.dtype, "fill", [&](auto t) {
    using T = decltype(t);
    launch_vectorised<wide_for<T>()>(FillOp<T>{operand<T>(dst), static_cast<float>(value)}, dst, {}, stream);
  });
}

void launch_convert(const TensorArg& dst, const TensorArg& src, cudaStream_t stream) {
  require_same_shape(dst, src, "copy");
  dispatch_value_type(dst.dtype, "copy", [&](auto d) {
    using D = decltype(d);
    dispatch_value_type(src.dtype, "copy", [&](auto s) {
      using S = decltype(s);
      constexpr int kWide = static_cast<int>(16 / (sizeof(D) > sizeof(S) ? sizeof(D) : sizeof(S)));
      launch_vectorised<kWide>(ConvertOp<D, S>{operand<D>(dst), operand<const S>(src)}, dst, {&src}, stream);
    });
  });
}

void launch_mul_scalar(const TensorArg& dst, const TensorArg& src, double scalar, cudaStream_t stream) {
  require_same_shape(dst, src, "mul");
  if (dst.dtype != src.dtype) throw Error("cuda mul: dst and src dtypes differ");
  dispatch_float_type(dst.dtype, "mul", [&](auto t) {
    using T = decltype(t);
    launch_vectorised<wide_for<T>()>(MulScalarOp<T>{operand<T>(dst), operand<const T>(src), static_cast<float>(scalar)},
                                     dst, {&src}, stream);
  });
}

void launch_add(const TensorArg& dst, const TensorArg& a, const TensorArg& b, cudaStream_t stream) {
  require_same_shape(dst, a, "add");
  require_same_shape(dst, b, "add");
  if (dst.dtype != a.dtype || dst.dtype != b.dtype) throw Error("cuda add: operand dtypes differ");
  dispatch_float_type(dst.dtype, "add", [&](auto t) {
    using T = decltype(t);
    launch_vectorised<wide_for<T>()>(AddOp<T>{operand<T>(dst), operand<const T>(a), operand<const T>(b)}, dst, {&a, &b},
                                     stream);
  });
}

void launch_masked_fill(const TensorArg& dst, const TensorArg& src, const TensorArg& mask, double value,
                        cudaStream_t stream) {
  require_same_shape(dst, src, "masked_fill");
  require_same_shape(dst, mask, "masked_fill");
  require_bool(mask, "masked_fill");
  if (dst.dtype != src.dtype) throw Error("cuda masked_fill: dst and src dtypes differ");
  dispatch_float_type(dst.dtype, "masked_fill", [&](auto t) {
    using T = decltype(t);
    launch_vectorised<wide_for<T>()>(
        MaskedFillOp<T>{operand<T>(dst), operand<const T>(src), operand<const bool_t>(mask), static_cast<float>(value)},
        dst, {&src, &mask}, stream);
  });
}

void launch_where(const TensorArg& dst, const TensorArg& condition, const TensorArg& if_true, const TensorArg& if_false,
                  cudaStream_t stream) {
  require_same_shape(dst, condition, "where");
  require_same_shape(dst, if_true, "where");
  require_same_shape(dst, if_false, "where");
  require_bool(condition, "where");
  if (dst.dtype != if_true.dtype || dst.dtype != if_false.dtype) throw Error("cuda where: value dtypes differ");
  dispatch_value_type(dst.dtype, "where", [&](auto t) {
    using T = decltype(t);
    launch_vectorised<wide_for<T>()>(WhereOp<T>{operand<T>(dst), operand<const bool_t>(condition),
                                                operand<const T>(if_true), operand<const T>(if_false)},
                                     dst, {&condition, &if_true, &if_false}, stream);
  });
}

void launch_logical_not(const TensorArg& dst, const TensorArg& src, cudaStream_t stream) {
  require_same_shape(dst, src, "logical_not");
  require_bool(dst, "logical_not");
  require_bool(src, "logical_not");
  launch_vectorised<16>(LogicalNotOp{operand<bool_t>(dst), operand<const bool_t>(src)}, dst, {&src}, stream);
}

void launch_isneginf(const TensorArg& dst, const TensorArg& src, cudaStream_t stream) {
  require_same_shape(dst, src, "isneginf");
  require_bool(dst, "isneginf");
  dispatch_float_type(src.dtype, "isneginf", [&](auto t) {
    using T = decltype(t);
    launch_vectorised<wide_for<T>()>(IsNegInfOp<T>{operand<bool_t>(dst), operand<const T>(src)}, dst, {&src}, stream);
  });
}

void launch_triangle(const TensorArg& dst, const TensorArg& src, std::int64_t diagonal, bool lower, cudaStream_t stream) {
  require_same_shape(dst, src, lower ? "tril" : "triu");
  if (dst.dtype != src.dtype) throw Error("cuda tril/triu: dst and src dtypes differ");
  dispatch_value_type(dst.dtype, lower ? "tril" : "triu", [&](auto t) {
    using T = decltype(t);
    launch_vectorised<wide_for<T>()>(TriangleOp<T>{operand<T>(dst), operand<const T>(src), diagonal, lower}, dst,
                                     {&src}, stream);
  });
}

void launch_sum_head_groups(const TensorArg& dst, const TensorArg& src, cudaStream_t stream) {
  if (dst.shape[0] != src.shape[0] || dst.shape[2] != src.shape[2] || dst.shape[3] != src.shape[3] ||
      dst.shape[1] == 0 || src.shape[1] % dst.shape[1] != 0) {
    throw Error(str_cat("cuda sum_head_groups: [", src.shape[0], ",", src.shape[1], ",", src.shape[2], ",", src.shape[3],
                        "] does not sum into [", dst.shape[0], ",", dst.shape[1], ",", dst.shape[2], ",", dst.shape[3],
                        "] by groups of heads"));
  }
  const auto group = static_cast<std::uint32_t>(src.shape[1] / dst.shape[1]);
  dispatch_float_type(dst.dtype, "sum_head_groups", [&](auto d) {
    using D = decltype(d);
    dispatch_float_type(src.dtype, "sum_head_groups", [&](auto s) {
      using S = decltype(s);
      constexpr int kWide = static_cast<int>(16 / (sizeof(D) > sizeof(S) ? sizeof(D) : sizeof(S)));
      launch_vectorised<kWide>(HeadGroupSumOp<D, S>{operand<D>(dst), operand<const S>(src), group}, dst, {&src},
                               stream);
    });
  });
}

}  // namespace attnprof::cuda
