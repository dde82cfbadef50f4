// The backward's ops: each opens the `cpu_op` range PyTorch's autograd shows for it and runs its
// backend calls, each one piece of device work.
#include <attnprof/error.h>
#include <fmt/format.h>

#include "ops/ops.h"

namespace attnprof::ops {
namespace {

using profiler::Range;
using trace::Category;

std::vector<std::int64_t> bmm_shape(const Tensor& a, const Tensor& b, bool transpose_b) {
  if (a.rank() != 4 || b.rank() != 4) {
    throw Error(fmt::format("aten::bmm: 4-d operands expected, got {} and {}", a.describe(), b.describe()));
  }
  return {a.size(0), a.size(1), a.size(2), transpose_b ? b.size(2) : b.size(3)};
}

}  // namespace

AutogradNode::AutogradNode(std::string_view node)
    : evaluate_(Category::cpu_op, fmt::format("autograd::engine::evaluate_function: {}", node)),
      node_(Category::cpu_op, node) {}

Tensor transpose_last2(const Tensor& src) {
  if (src.rank() < 2) throw Error(fmt::format("aten::transpose: {} has fewer than 2 dims", src.describe()));
  std::vector<std::int64_t> shape = src.shape(), strides = src.strides();
  std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
  std::swap(strides[strides.size() - 1], strides[strides.size() - 2]);
  return src.view_strided(shape, strides);
}

Tensor bmm(const Tensor& a, const Tensor& b, bool transpose_b, bool allow_tensor_cores) {
  Range r(Category::cpu_op, "aten::bmm", {&a, &b});
  Tensor out = Tensor::empty(bmm_shape(a, b, transpose_b), a.dtype(), a.device());
  backend(a.device()).batched_gemm(out, a, b, transpose_b, 1.0f, allow_tensor_cores);
  return out;
}

void bmm_out(Tensor& dst, const Tensor& a, const Tensor& b, bool transpose_b, bool allow_tensor_cores) {
  Range r(Category::cpu_op, "aten::bmm", {&a, &b});
  if (dst.shape() != bmm_shape(a, b, transpose_b)) {
    throw Error(fmt::format("aten::bmm: out {} does not fit {} · {}", dst.describe(), a.describe(), b.describe()));
  }
  backend(a.device()).batched_gemm(dst, a, b, transpose_b, 1.0f, allow_tensor_cores);
}

Tensor softmax_backward_data(const Tensor& grad, const Tensor& probs) {
  Range r(Category::cpu_op, "aten::_softmax_backward_data", {&grad, &probs});
  Tensor out = Tensor::empty(grad.shape(), grad.dtype(), grad.device());
  backend(grad.device()).softmax_backward(out, grad, probs, 1.0);
  return out;
}

// No aten op: torch.compile emits one Triton kernel for the backward of softmax, masked_fill and
// mul, and writes it over dP's buffer.
void scale_mask_softmax_backward_(Tensor& grad, const Tensor& probs, double scale) {
  Range r(Category::cpu_op, "attnprof::scale_mask_softmax_backward_", {&grad, &probs});
  backend(grad.device()).softmax_backward(grad, grad, probs, scale);
}

void sum_head_groups_out(Tensor& dst, const Tensor& src) {
  Range r(Category::cpu_op, "aten::sum", {&src});
  backend(src.device()).sum_head_groups(dst, src);
}

}  // namespace attnprof::ops
