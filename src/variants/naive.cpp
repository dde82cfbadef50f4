// naive: attention as first written in PyTorch —
//   scores = (q @ kᵀ) * scale; scores = scores.masked_fill(mask, -inf); p = softmax(scores); out = p @ v
// Pieces of work per forward on the CPU, causal: gemm, mul, copy + masked_fill (the out-of-place
// masked_fill clones first), softmax, gemm = 6 (4 without the mask). The bool causal mask
// (triu(ones, 1 + offset), offset = Sk − Sq for --causal-align bottom-right) is built once in
// prepare(), outside the forward. Memory: two S×S score tensors live at once. A row whose keys are
// all masked (bottom-right with Sq > Sk: the first Sq − Sk rows) gives NaN (softmax of all −inf),
// exactly as PyTorch's naive module does.
#include "variants/naive.h"

#include <attnprof/error.h>

#include <limits>
#include <memory>

#include "ops/ops.h"
#include "variants/builtin_list.h"
#include "variants/common.h"

namespace attnprof::variants {

NaiveVariant::NaiveVariant(bool in_place) : in_place_(in_place) {}

std::string_view NaiveVariant::name() const { return in_place_ ? "inplace" : "naive"; }

std::string_view NaiveVariant::summary() const {
  return in_place_ ? "matmul(q,kᵀ) → mul(scale) → masked_fill_ in place → softmax → matmul"
                   : "matmul(q,kᵀ) → mul(scale) → masked_fill (copy, then fill) → softmax → matmul";
}

std::string NaiveVariant::describe(const AttentionSpec& spec) const {
  return spec.causal ? std::string(summary()) : "matmul(q,kᵀ) → mul(scale) → softmax → matmul";
}

std::optional<std::string> NaiveVariant::refusal(const AttentionSpec& spec) const {
  return common_refusal(name(), spec);
}

void NaiveVariant::prepare(const AttentionSpec& spec) {
  mask_ = Tensor();
  // masked where j > i + offset: triu(ones, 1 + offset), as PyTorch builds causal_lower_right's mask
  if (spec.causal) mask_ = ops::triu(ops::ones_bool(spec.seq_q, spec.seq_k, spec.device), 1 + spec.causal_offset());
  prepared_ = spec;
}

void NaiveVariant::forward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out) {
  if (spec.causal && (!mask_.defined() || mask_.size(0) != spec.seq_q || mask_.size(1) != spec.seq_k ||
                      mask_.device() != spec.device || prepared_.causal_offset() != spec.causal_offset())) {
    throw Error(std::string(name()) + ": prepare() must be called for this shape before forward()");
  }
  Tensor scores = ops::mul(ops::matmul(q, k, /*transpose_b=*/true), spec.softmax_scale());
  if (spec.causal) {
    const Tensor mask = ops::broadcast_to(mask_, scores.shape());
    if (in_place_) {
      ops::masked_fill_(scores, mask, -std::numeric_limits<double>::infinity());
    } else {
      scores = ops::masked_fill(scores, mask, -std::numeric_limits<double>::infinity());
    }
  }
  Tensor probs = ops::softmax(scores);
  scores = Tensor();
  ops::matmul_out(out, probs, v, /*transpose_b=*/false);
}

std::int64_t NaiveVariant::workspace_estimate(const AttentionSpec& spec) const {
  // (q·kᵀ) and its scaled copy are alive together, then the masked copy (naive) and the softmax
  // output each beside one other S×S tensor: two at a time, plus the mask and the GEMM panels.
  const std::int64_t mask = spec.causal ? sat_mul(spec.seq_q, spec.seq_k) : 0;
  return sat_sum({sat_product({2, score_elements(spec), element_bytes(spec)}), mask, cpu_gemm_panel_bytes(spec)});
}

std::unique_ptr<Variant> make_naive_variant() { return std::make_unique<NaiveVariant>(false); }

}  // namespace attnprof::variants
