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
#include <utility>

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
  run_forward(spec, q, k, v, out, nullptr);
}

void NaiveVariant::forward_for_backward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v,
                                        Tensor& out) {
  probs_ = Tensor();
  run_forward(spec, q, k, v, out, &probs_);
}

void NaiveVariant::run_forward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v,
                               Tensor& out, Tensor* probs_kept) {
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
  if (probs_kept != nullptr) *probs_kept = std::move(probs);
}

std::int64_t NaiveVariant::workspace_estimate(const AttentionSpec& spec) const {
  // (q·kᵀ) and its scaled copy are alive together, then the masked copy (naive) and the softmax
  // output each beside one other S×S tensor: two at a time, plus the mask and the GEMM panels.
  const std::int64_t mask = spec.causal ? sat_mul(spec.seq_q, spec.seq_k) : 0;
  return sat_sum({sat_product({2, score_elements(spec), element_bytes(spec)}), mask, cpu_gemm_panel_bytes(spec)});
}

std::optional<std::string> NaiveVariant::backward_refusal(const AttentionSpec& spec) const {
  return op_sequence_backward_refusal(name(), spec);
}

// What loss.backward() runs for the forward above, node by node in the autograd engine's order
// (inplace's masked_fill_ has the same MaskedFillBackward0 as naive's masked_fill):
//   BmmBackward0         dP = dO·Vᵀ, dV = Pᵀ·dO                     2 GEMMs
//   SoftmaxBackward0     dS = P ⊙ (dP − rowsum(dP ⊙ P))              1
//   MaskedFillBackward0  dS.masked_fill(mask, 0) (a clone, the fill)  2 (causal only)
//   MulBackward0         dS · scale                                  1
//   BmmBackward0         dQ = dS·K, dK = dSᵀ·Q                       2 GEMMs
//   ExpandBackward0 ×2   GQA only: dV, then dK, summed over each group of query heads (aten::sum)
// A fully masked row (bottom-right, Sq > Sk) has NaN probabilities: its dS is zeroed by the
// masked_fill, but dV = Pᵀ·dO reads the NaN, so dV is NaN, exactly as PyTorch's naive module's.
void NaiveVariant::backward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v,
                            const Tensor& out, const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv) {
  (void)out;
  if (!probs_.defined() || probs_.size(0) != spec.batch || probs_.size(1) != spec.heads ||
      probs_.size(2) != spec.seq_q || probs_.size(3) != spec.seq_k || probs_.device() != spec.device) {
    throw Error(std::string(name()) + ": forward_for_backward() must run for this shape before backward()");
  }
  Tensor dk_target = kv_grad_target(spec, dk, spec.dtype), dv_target = kv_grad_target(spec, dv, spec.dtype);
  Tensor grad;  // the gradient of the current S×S tensor, walking back from the probabilities
  {
    ops::AutogradNode node("BmmBackward0");  // out = probs · v
    grad = ops::bmm(dout, v, /*transpose_b=*/true);
    ops::bmm_out(dv_target, ops::transpose_last2(probs_), dout, /*transpose_b=*/false);
  }
  {
    ops::AutogradNode node("SoftmaxBackward0");
    grad = ops::softmax_backward_data(grad, probs_);
  }
  if (spec.causal) {
    ops::AutogradNode node("MaskedFillBackward0");
    grad = ops::masked_fill(grad, ops::broadcast_to(mask_, grad.shape()), 0.0);
  }
  {
    ops::AutogradNode node("MulBackward0");
    grad = ops::mul(grad, spec.softmax_scale());
  }
  {
    ops::AutogradNode node("BmmBackward0");  // scores = q · kᵀ
    ops::bmm_out(dq, grad, k, /*transpose_b=*/false);
    ops::bmm_out(dk_target, ops::transpose_last2(grad), q, /*transpose_b=*/false);
  }
  grad = Tensor();
  sum_kv_grad(spec, dv, dv_target);
  sum_kv_grad(spec, dk, dk_target);
}

std::int64_t NaiveVariant::backward_workspace_estimate(const AttentionSpec& spec) const {
  // The kept probabilities, then dP beside the softmax backward's output (or that output beside its
  // masked clone): three S×S tensors at the peak, plus the mask, GQA's expanded dK and dV and the
  // GEMM panels.
  const std::int64_t mask = spec.causal ? sat_mul(spec.seq_q, spec.seq_k) : 0;
  return sat_sum({sat_product({3, score_elements(spec), element_bytes(spec)}), mask,
                  expanded_kv_grad_bytes(spec, element_bytes(spec)), cpu_gemm_panel_bytes(spec)});
}

std::unique_ptr<Variant> make_naive_variant() { return std::make_unique<NaiveVariant>(false); }

}  // namespace attnprof::variants
