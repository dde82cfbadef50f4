// The aten-like ops. Each opens a `cpu_op` range with PyTorch's name (nested as PyTorch nests them:
// aten::masked_fill → aten::clone → aten::copy_, then aten::masked_fill_), allocates its output on
// the inputs' device, and runs its backend calls, each one piece of device work.
#include "ops/ops.h"

#include <attnprof/error.h>
#include <attnprof/profiler.h>

#include <fmt/format.h>

#include <limits>

namespace attnprof::ops {
namespace {

using profiler::Range;
using trace::Category;

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

Tensor like(const Tensor& src, DType dtype) { return Tensor::empty(src.shape(), dtype, src.device()); }

// `small` as-is when it already has `shape`, else its stride-0 broadcast.
Tensor expand_to(const Tensor& small, const std::vector<std::int64_t>& shape) {
  return small.shape() == shape ? small : broadcast_to(small, shape);
}

std::vector<std::int64_t> matmul_shape(const Tensor& a, const Tensor& b, bool transpose_b) {
  if (a.rank() != 4 || b.rank() != 4) {
    throw Error(fmt::format("aten::matmul: 4-d operands expected, got {} and {}", a.describe(), b.describe()));
  }
  return {a.size(0), a.size(1), a.size(2), transpose_b ? b.size(2) : b.size(3)};
}

}  // namespace

Tensor broadcast_to(const Tensor& small, const std::vector<std::int64_t>& shape) {
  const int pad = static_cast<int>(shape.size()) - small.rank();
  if (pad < 0) throw Error(fmt::format("broadcast_to: {} has more dims than the target", small.describe()));
  std::vector<std::int64_t> strides(shape.size(), 0);
  for (int d = 0; d < small.rank(); ++d) {
    const std::int64_t target = shape[static_cast<std::size_t>(pad + d)];
    if (small.size(d) == target) {
      strides[static_cast<std::size_t>(pad + d)] = small.stride(d);
    } else if (small.size(d) != 1) {
      throw Error(fmt::format("broadcast_to: {} does not broadcast to the target's dim {} ({})", small.describe(),
                              pad + d, target));
    }
  }
  return small.view_strided(shape, strides);
}

Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_b, bool allow_tensor_cores) {
  Range r(Category::cpu_op, "aten::matmul", {&a, &b});
  Tensor out = Tensor::empty(matmul_shape(a, b, transpose_b), a.dtype(), a.device());
  backend(a.device()).batched_gemm(out, a, b, transpose_b, 1.0f, allow_tensor_cores);
  return out;
}

void matmul_out(Tensor& dst, const Tensor& a, const Tensor& b, bool transpose_b, bool allow_tensor_cores) {
  Range r(Category::cpu_op, "aten::matmul", {&a, &b});
  if (dst.shape() != matmul_shape(a, b, transpose_b)) {
    throw Error(fmt::format("aten::matmul: out {} does not fit {} · {}", dst.describe(), a.describe(), b.describe()));
  }
  backend(a.device()).batched_gemm(dst, a, b, transpose_b, 1.0f, allow_tensor_cores);
}

Tensor mul(const Tensor& src, double scalar) {
  Range r(Category::cpu_op, "aten::mul", {&src});
  Tensor out = like(src, src.dtype());
  backend(src.device()).mul_scalar(out, src, scalar);
  return out;
}

void mul_out(Tensor& dst, const Tensor& src, double scalar) {
  Range r(Category::cpu_op, "aten::mul", {&src});
  backend(src.device()).mul_scalar(dst, src, scalar);
}

void mul_(Tensor& self, double scalar) {
  Range r(Category::cpu_op, "aten::mul_", {&self});
  backend(self.device()).mul_scalar(self, self, scalar);
}

void add_(Tensor& self, const Tensor& other) {
  Range r(Category::cpu_op, "aten::add_", {&self, &other});
  backend(self.device()).add(self, self, expand_to(other, self.shape()));
}

void masked_fill_(Tensor& self, const Tensor& mask, double value) {
  Range r(Category::cpu_op, "aten::masked_fill_", {&self, &mask});
  backend(self.device()).masked_fill(self, self, expand_to(mask, self.shape()), value);
}

Tensor masked_fill(const Tensor& src, const Tensor& mask, double value) {
  Range r(Category::cpu_op, "aten::masked_fill", {&src, &mask});
  Tensor out;
  {
    Range clone(Category::cpu_op, "aten::clone", {&src});
    out = like(src, src.dtype());
    Range copy(Category::cpu_op, "aten::copy_", {&out, &src});
    backend(src.device()).copy(out, src);
  }
  masked_fill_(out, mask, value);
  return out;
}

Tensor softmax(const Tensor& src) {
  Range r(Category::cpu_op, "aten::softmax", {&src});
  Range inner(Category::cpu_op, "aten::_softmax", {&src});
  Tensor out = like(src, src.dtype());
  backend(src.device()).softmax_lastdim(out, src);
  return out;
}

Tensor safe_softmax(Tensor src) {
  Range r(Category::cpu_op, "aten::_safe_softmax", {&src});
  Tensor probs = softmax(src);
  Tensor neg_inf;
  {
    Range op(Category::cpu_op, "aten::isneginf", {&src});
    neg_inf = like(src, DType::boolean);
    backend(src.device()).isneginf(neg_inf, src);
  }
  std::vector<std::int64_t> row_shape = src.shape();
  row_shape.back() = 1;
  Tensor fully_masked;
  {
    Range op(Category::cpu_op, "aten::all", {&neg_inf});
    fully_masked = Tensor::empty(row_shape, DType::boolean, src.device());
    backend(src.device()).all_lastdim(fully_masked, neg_inf);
  }
  neg_inf = Tensor();
  const DType dtype = src.dtype();
  const Device device = src.device();
  src = Tensor();
  Tensor zero;
  {
    Range op(Category::cpu_op, "aten::scalar_tensor");
    zero = Tensor::empty({1}, dtype, device);
    backend(device).fill(zero, 0.0);
  }
  Range op(Category::cpu_op, "aten::where", {&fully_masked, &probs});
  Tensor out = like(probs, dtype);
  backend(device).where(out, expand_to(fully_masked, probs.shape()), expand_to(zero, probs.shape()), probs);
  return out;
}

Tensor to(const Tensor& src, DType dtype) {
  Range r(Category::cpu_op, "aten::to", {&src});
  Range inner(Category::cpu_op, "aten::_to_copy", {&src});
  Tensor out = like(src, dtype);
  Range copy(Category::cpu_op, "aten::copy_", {&out, &src});
  backend(src.device()).copy(out, src);
  return out;
}

void copy_(Tensor& dst, const Tensor& src) {
  Range r(Category::cpu_op, "aten::copy_", {&dst, &src});
  backend(dst.device()).copy(dst, src);
}

Tensor ones_bool(std::int64_t rows, std::int64_t cols, Device device) {
  Range r(Category::cpu_op, "aten::ones");
  Tensor out = Tensor::empty({rows, cols}, DType::boolean, device);
  Range fill(Category::cpu_op, "aten::fill_", {&out});
  backend(device).fill(out, 1.0);
  return out;
}

Tensor tril(const Tensor& src, std::int64_t diagonal) {
  Range r(Category::cpu_op, "aten::tril", {&src});
  Tensor out = like(src, src.dtype());
  backend(src.device()).tril(out, src, diagonal);
  return out;
}

Tensor triu(const Tensor& src, std::int64_t diagonal) {
  Range r(Category::cpu_op, "aten::triu", {&src});
  Tensor out = like(src, src.dtype());
  backend(src.device()).triu(out, src, diagonal);
  return out;
}

Tensor logical_not(const Tensor& src) {
  Range r(Category::cpu_op, "aten::logical_not", {&src});
  Tensor out = like(src, DType::boolean);
  backend(src.device()).logical_not(out, src);
  return out;
}

Tensor zeros_like(const Tensor& src, DType dtype) {
  Range r(Category::cpu_op, "aten::zeros_like", {&src});
  Tensor out = like(src, dtype);
  Range fill(Category::cpu_op, "aten::fill_", {&out});
  backend(src.device()).fill(out, 0.0);
  return out;
}

// No aten op: torch.compile emits one Triton kernel for mul + masked_fill + softmax, and writes
// it into the scores' own buffer (one S×S buffer, not two).
void scale_mask_softmax_(Tensor& self, double scale, bool causal, std::int64_t causal_offset) {
  Range r(Category::cpu_op, "attnprof::scale_mask_softmax_", {&self});
  backend(self.device()).scale_mask_softmax(self, self, scale, causal, causal_offset);
}

void flash_attention_out(const AttentionSpec& spec, Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v,
                         Tensor* lse) {
  Range r(Category::cpu_op, "aten::scaled_dot_product_attention", {&q, &k, &v});
  Range inner(Category::cpu_op,
              q.device() == Device::cpu ? "aten::_scaled_dot_product_flash_attention_for_cpu"
                                        : "aten::_scaled_dot_product_flash_attention",
              {&q, &k, &v});
  backend(q.device()).attention_flash(spec, out, q, k, v, lse);
}

void efficient_attention_out(const AttentionSpec& spec, Tensor& out, const Tensor& q, const Tensor& k,
                             const Tensor& v, Tensor* lse) {
  Range r(Category::cpu_op, "aten::scaled_dot_product_attention", {&q, &k, &v});
  Range inner(Category::cpu_op, "aten::_scaled_dot_product_efficient_attention", {&q, &k, &v});
  backend(q.device()).attention_efficient(spec, out, q, k, v, lse);
}

// PyTorch's names: SDPA's backward op, then the kernel's (CPU: one op for flash; efficient has
// no CPU kernel in PyTorch, so its names are the CUDA ones on either device).
void flash_attention_backward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& out, const Tensor& lse, const Tensor& dout, Tensor& dq, Tensor& dk,
                              Tensor& dv) {
  if (q.device() == Device::cpu) {
    Range r(Category::cpu_op, "aten::_scaled_dot_product_flash_attention_for_cpu_backward", {&dout, &q, &k, &v});
    backend(q.device()).attention_flash_backward(spec, dq, dk, dv, q, k, v, out, lse, dout);
    return;
  }
  Range r(Category::cpu_op, "aten::_scaled_dot_product_flash_attention_backward", {&dout, &q, &k, &v});
  Range inner(Category::cpu_op, "aten::_flash_attention_backward", {&dout, &q, &k, &v});
  backend(q.device()).attention_flash_backward(spec, dq, dk, dv, q, k, v, out, lse, dout);
}

void efficient_attention_backward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& out, const Tensor& lse, const Tensor& dout, Tensor& dq, Tensor& dk,
                                  Tensor& dv) {
  Range r(Category::cpu_op, "aten::_scaled_dot_product_efficient_attention_backward", {&dout, &q, &k, &v});
  Range inner(Category::cpu_op, "aten::_efficient_attention_backward", {&dout, &q, &k, &v});
  backend(q.device()).attention_efficient_backward(spec, dq, dk, dv, q, k, v, out, lse, dout);
}

std::int64_t fused_backward_workspace_bytes(const AttentionSpec& spec, bool flash) {
  if (!has_backend(spec.device)) return Backend::flash_backward_default_bytes(spec);
  return backend(spec.device).fused_backward_workspace_bytes(spec, flash);
}

}  // namespace attnprof::ops
