// math: PyTorch's _scaled_dot_product_attention_math, the careful fp32 reference decomposition:
//   q, k, v upcast to fp32 (3 copies; none for fp32 inputs);
//   causal: keep = tril(ones(Sq, Sk), offset) rebuilt every call (ones, tril; offset 0 top-left,
//           Sk − Sq bottom-right, as PyTorch's causal_lower_right), then the additive mask
//           zeros_like(keep, fp32).masked_fill_(logical_not(keep), -inf) (fill, logical_not, masked_fill);
//   q·√scale and k·√scale (2 muls), an fp32 GEMM off the tensor cores, add_ the mask,
//   _safe_softmax (softmax, isneginf, all, scalar_tensor fill, where), the attention weights
//   downcast and discarded (PyTorch returns them beside the output), an fp32 GEMM, downcast.
// Pieces of work per causal bf16/fp16 forward: 20, as PyTorch's (14 non-causal; 15 causal fp32,
// whose GEMM writes the output directly). Memory peak: two fp32 S×S tensors (scores and softmax)
// and the isneginf mask, plus fp32 copies of q, k, v and the scaled q — the scores are dropped
// inside _safe_softmax before the where's output is allocated, matching PyTorch's measured peak. A row with every key masked
// (bottom-right with Sq > Sk) gives 0 (the safe softmax's where), as PyTorch's math path does.
#include <attnprof/error.h>
#include <attnprof/profiler.h>

#include <cmath>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "ops/ops.h"
#include "variants/builtin_list.h"
#include "variants/common.h"

namespace attnprof::variants {
namespace {

class MathVariant final : public Variant {
 public:
  std::string_view name() const override { return "math"; }
  std::string_view summary() const override {
    return "fp32 reference: upcast, causal mask rebuilt per call, √scale on q and k, fp32 GEMMs, additive mask, "
           "NaN-safe softmax, downcast";
  }
  std::string describe(const AttentionSpec& spec) const override {
    return spec.causal ? std::string(summary())
                       : "fp32 reference: upcast, √scale on q and k, fp32 GEMMs, NaN-safe softmax, downcast";
  }
  std::optional<std::string> refusal(const AttentionSpec& spec) const override { return common_refusal(name(), spec); }

  void forward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out) override {
    run_forward(spec, q, k, v, out, nullptr);
  }
  std::optional<std::string> backward_refusal(const AttentionSpec& spec) const override {
    return op_sequence_backward_refusal(name(), spec);
  }
  void forward_for_backward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v,
                            Tensor& out) override {
    saved_ = Saved{};
    run_forward(spec, q, k, v, out, &saved_);
  }
  void backward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv) override;
  void release_saved() override { saved_ = Saved{}; }
  std::int64_t backward_workspace_estimate(const AttentionSpec& spec) const override;

  std::int64_t workspace_estimate(const AttentionSpec& spec) const override {
    // At isneginf: fp32 scores and softmax (2 × 4 bytes) and the bool mask (1); later the where's
    // output and the discarded weights (4 + 2) replace them.
    const std::int64_t scores = sat_mul(9, score_elements(spec));
    // fp32 q, k, v copies, the scaled q and k, and the fp32 result before the downcast.
    const std::int64_t q_elems = sat_product({spec.batch, spec.heads, spec.seq_q, spec.head_dim});
    const std::int64_t kv_elems = sat_product({spec.batch, spec.kv_heads, spec.seq_k, spec.head_dim});
    const std::int64_t operands = sat_mul(4, sat_add(sat_mul(3, q_elems), sat_mul(4, kv_elems)));
    // bool keep, its logical_not, and the fp32 additive mask.
    const std::int64_t masks = spec.causal ? sat_product({6, spec.seq_q, spec.seq_k}) : 0;
    return sat_sum({scores, operands, masks});
  }

 private:
  // What the autograd graph of the forward keeps for its backward: the scaled fp32 q and k (the
  // first BmmBackward0's operands), the probabilities (SafeSoftmaxBackward0's result and the second
  // BmmBackward0's operand) and the fp32 v.
  struct Saved {
    Tensor q_scaled, k_scaled, probs, v;
  };
  void run_forward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out,
                   Saved* saved);
  Saved saved_;
};

void MathVariant::run_forward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v,
                              Tensor& out, Saved* saved) {
  profiler::Range sdpa(trace::Category::cpu_op, "aten::scaled_dot_product_attention", {&q, &k, &v});
  profiler::Range math(trace::Category::cpu_op, "aten::_scaled_dot_product_attention_math", {&q, &k, &v});
  const bool upcast = spec.dtype != DType::fp32;
  const Tensor qf = upcast ? ops::to(q, DType::fp32) : q;
  const Tensor kf = upcast ? ops::to(k, DType::fp32) : k;
  const Tensor vf = upcast ? ops::to(v, DType::fp32) : v;

  Tensor additive_mask;
  if (spec.causal) {
    const Tensor keep = ops::tril(ops::ones_bool(spec.seq_q, spec.seq_k, spec.device), spec.causal_offset());
    additive_mask = ops::zeros_like(keep, DType::fp32);
    ops::masked_fill_(additive_mask, ops::logical_not(keep), -std::numeric_limits<double>::infinity());
  }
  const double sqrt_scale = std::sqrt(spec.softmax_scale());
  // k's mul first (as GCC evaluated the arguments when the two muls were arguments of matmul).
  Tensor k_scaled = ops::mul(kf, sqrt_scale);
  Tensor q_scaled = ops::mul(qf, sqrt_scale);
  Tensor scores = ops::matmul(q_scaled, k_scaled, /*transpose_b=*/true, /*allow_tensor_cores=*/false);
  if (saved == nullptr) q_scaled = k_scaled = Tensor();  // a plain forward frees them here, as before
  if (spec.causal) ops::add_(scores, additive_mask);
  Tensor probs = ops::safe_softmax(std::move(scores));
  if (upcast) {
    // PyTorch's math returns the attention weights too, downcast, and SDPA drops them: one S×S
    // kernel nobody reads. Its make_tuple evaluates that argument first (GCC, right to left), so
    // the weights exist during the P·V GEMM.
    const Tensor discarded_weights = ops::to(probs, spec.dtype);
    const Tensor result = ops::matmul(probs, vf, /*transpose_b=*/false, /*allow_tensor_cores=*/false);
    ops::copy_(out, result);  // the downcast
  } else {
    ops::matmul_out(out, probs, vf, /*transpose_b=*/false, /*allow_tensor_cores=*/false);
  }
  if (saved != nullptr) *saved = Saved{std::move(q_scaled), std::move(k_scaled), std::move(probs), vf};
}

// What loss.backward() runs for the forward above, node by node in the autograd engine's order
// (its ready queue takes the node made last in the forward first):
//   ToCopyBackward0      dO upcast to fp32                                   1 (bf16/fp16 only)
//   BmmBackward0         dP = dO·Vᵀ, dV = Pᵀ·dO (fp32, off the tensor cores)  2 GEMMs
//   SafeSoftmaxBackward0 dS = P ⊙ (dP − rowsum(dP ⊙ P))                       1
//   BmmBackward0         d(q·√s) = dS·(k·√s), d(k·√s) = dSᵀ·(q·√s)           2 GEMMs
//   MulBackward0 ×2      · √scale, k's first (its mul was made last)          2
//   ExpandBackward0 ×2   GQA only: dV, then dK, summed over each group of query heads
//   ToCopyBackward0 ×3   dV, dK, dQ downcast into the caller's buffers        3 (bf16/fp16 only)
// The additive mask's AddBackward0 passes the gradient through and runs nothing. A fully masked
// row (bottom-right, Sq > Sk) has probabilities 0 (the safe softmax), so its gradients are 0.
void MathVariant::backward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v,
                           const Tensor& out, const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv) {
  (void)q, (void)k, (void)v, (void)out;
  const Saved& s = saved_;
  if (!s.probs.defined() ||
      s.probs.shape() != std::vector<std::int64_t>{spec.batch, spec.heads, spec.seq_q, spec.seq_k} ||
      s.probs.device() != spec.device) {
    throw Error("math: forward_for_backward() must run for this shape before backward()");
  }
  const bool upcast = spec.dtype != DType::fp32;
  constexpr bool kNoTensorCores = false;
  Tensor dout_f = dout;
  if (upcast) {
    ops::AutogradNode node("ToCopyBackward0");
    dout_f = ops::to(dout, DType::fp32);
  }
  // fp32 gradients of v, k and q: the caller's buffers when nothing follows (fp32, no GQA).
  Tensor dv_f = kv_grad_target(spec, dv, DType::fp32), dk_f = kv_grad_target(spec, dk, DType::fp32);
  Tensor dq_f = upcast ? Tensor::empty(dq.shape(), DType::fp32, dq.device()) : dq;
  Tensor grad;
  {
    ops::AutogradNode node("BmmBackward0");  // result = probs · v
    grad = ops::bmm(dout_f, s.v, /*transpose_b=*/true, kNoTensorCores);
    ops::bmm_out(dv_f, ops::transpose_last2(s.probs), dout_f, /*transpose_b=*/false, kNoTensorCores);
  }
  dout_f = Tensor();
  {
    ops::AutogradNode node("SafeSoftmaxBackward0");
    grad = ops::softmax_backward_data(grad, s.probs);
  }
  const double sqrt_scale = std::sqrt(spec.softmax_scale());
  {
    ops::AutogradNode node("BmmBackward0");  // scores = (q·√s) · (k·√s)ᵀ
    Tensor dq_scaled = ops::bmm(grad, s.k_scaled, /*transpose_b=*/false, kNoTensorCores);
    Tensor dk_scaled = ops::bmm(ops::transpose_last2(grad), s.q_scaled, /*transpose_b=*/false, kNoTensorCores);
    grad = Tensor();
    {
      ops::AutogradNode mul_k("MulBackward0");
      ops::mul_out(dk_f, dk_scaled, sqrt_scale);
    }
    ops::AutogradNode mul_q("MulBackward0");
    ops::mul_out(dq_f, dq_scaled, sqrt_scale);
  }
  // GQA: the group sums in fp32, into the caller's buffer when nothing follows (fp32).
  Tensor dv_sum = dv, dk_sum = dk;
  if (spec.kv_heads != spec.heads && upcast) {
    dv_sum = Tensor::empty(dv.shape(), DType::fp32, dv.device());
    dk_sum = Tensor::empty(dk.shape(), DType::fp32, dk.device());
  }
  sum_kv_grad(spec, dv_sum, dv_f);
  sum_kv_grad(spec, dk_sum, dk_f);
  if (!upcast) return;
  const Tensor& dv_done = spec.kv_heads != spec.heads ? dv_sum : dv_f;
  const Tensor& dk_done = spec.kv_heads != spec.heads ? dk_sum : dk_f;
  auto downcast = [](Tensor& dst, const Tensor& src) {
    ops::AutogradNode node("ToCopyBackward0");
    ops::copy_(dst, src);
  };
  downcast(dv, dv_done);
  downcast(dk, dk_done);
  downcast(dq, dq_f);
}

std::int64_t MathVariant::backward_workspace_estimate(const AttentionSpec& spec) const {
  // Kept: the fp32 probabilities and the scaled q and k, the fp32 v. At the softmax backward: the
  // probabilities, dP and dS (three fp32 S×S); beside them dO in fp32, the fp32 dV (expanded with
  // GQA), then the fp32 dQ and dK before and after the √scale (expanded with GQA) and their sums.
  const std::int64_t q_elems = sat_product({spec.batch, spec.heads, spec.seq_q, spec.head_dim});
  const std::int64_t kv_elems = sat_product({spec.batch, spec.kv_heads, spec.seq_k, spec.head_dim});
  const std::int64_t expanded = sat_product({spec.batch, spec.heads, spec.seq_k, spec.head_dim});
  const std::int64_t kept = sat_mul(4, sat_sum({q_elems, kv_elems, kv_elems}));
  const std::int64_t grads = sat_mul(4, sat_sum({sat_mul(3, q_elems), sat_mul(3, expanded), sat_mul(2, kv_elems)}));
  return sat_sum({sat_product({12, score_elements(spec)}), kept, grads});
}

}  // namespace

std::unique_ptr<Variant> make_math_variant() { return std::make_unique<MathVariant>(); }

}  // namespace attnprof::variants
