#include "variants/common.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>

#include "ops/backend.h"
#include "ops/ops.h"

namespace attnprof::variants {

std::optional<std::string> common_refusal(std::string_view variant, const AttentionSpec& spec) {
  if (spec.dtype != DType::bf16 && spec.dtype != DType::fp16 && spec.dtype != DType::fp32) {
    return fmt::format("dtype {}: the {} variant takes bf16, fp16, fp32", dtype_name(spec.dtype), variant);
  }
  if (auto why = ops::unavailable_reason(spec.device)) {
    return fmt::format("device {}: {}; allowed: cpu", device_name(spec.device), *why);
  }
  return std::nullopt;
}

std::optional<std::string> op_sequence_backward_refusal(std::string_view variant, const AttentionSpec& spec) {
  return common_refusal(variant, spec);
}

Tensor kv_grad_target(const AttentionSpec& spec, const Tensor& grad, DType dtype) {
  if (spec.kv_heads == spec.heads && grad.dtype() == dtype) return grad;
  return Tensor::empty({spec.batch, spec.heads, spec.seq_k, spec.head_dim}, dtype, grad.device());
}

void sum_kv_grad(const AttentionSpec& spec, Tensor& grad, const Tensor& expanded) {
  if (spec.kv_heads == spec.heads) return;
  ops::AutogradNode node("ExpandBackward0");
  ops::sum_head_groups_out(grad, expanded);
}

std::int64_t expanded_kv_grad_bytes(const AttentionSpec& spec, std::int64_t element_bytes) {
  if (spec.kv_heads == spec.heads) return 0;
  return sat_product({2, spec.batch, spec.heads, spec.seq_k, spec.head_dim, element_bytes});
}

std::int64_t score_elements(const AttentionSpec& spec) {
  return sat_product({spec.batch, spec.heads, spec.seq_q, spec.seq_k});
}

std::int64_t element_bytes(const AttentionSpec& spec) { return static_cast<std::int64_t>(dtype_size(spec.dtype)); }

std::int64_t cpu_gemm_panel_bytes(const AttentionSpec& spec) {
  if (spec.device != Device::cpu || spec.dtype == DType::fp32) return 0;
  // per thread, fp32: a 256-row block of A and of the result plus all of B (gemm.cpp), the larger
  // of Q·Kᵀ (256·D + D·Sk + 256·Sk) and P·V (256·Sk + Sk·D + 256·D)
  const std::int64_t rows = std::min<std::int64_t>(spec.seq_q, 256);
  const std::int64_t per_thread =
      sat_sum({sat_mul(rows, spec.seq_k), sat_mul(spec.seq_k, spec.head_dim), sat_mul(rows, spec.head_dim)});
  return sat_product({4, per_thread, omp_get_max_threads()});
}

}  // namespace attnprof::variants
