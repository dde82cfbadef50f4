// fused: what torch.compile makes of naive — gemm (q·kᵀ), one kernel that scales, masks causally
// and softmaxes each row in one pass, gemm (p·v). 3 pieces of work per forward, causal or not.
// Memory: one S×S buffer (the softmax runs in place on the scores, as inductor reuses it). The mask
// honours --causal-align (row i keeps keys j <= i + Sk − Sq bottom-right); a row with every key
// masked gives 0.
#include <attnprof/error.h>

#include <memory>
#include <vector>

#include "ops/ops.h"
#include "variants/builtin_list.h"
#include "variants/common.h"

namespace attnprof::variants {
namespace {

class FusedVariant final : public Variant {
 public:
  std::string_view name() const override { return "fused"; }
  std::string_view summary() const override { return "gemm → one scale+mask+softmax kernel → gemm (torch.compile's shape)"; }
  std::string describe(const AttentionSpec& spec) const override {
    return spec.causal ? std::string(summary()) : "gemm → one scale+softmax kernel → gemm (torch.compile's shape)";
  }
  std::optional<std::string> refusal(const AttentionSpec& spec) const override { return common_refusal(name(), spec); }
  void forward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out) override {
    run_forward(spec, q, k, v, out);
  }
  std::int64_t workspace_estimate(const AttentionSpec& spec) const override {
    return sat_add(sat_mul(score_elements(spec), element_bytes(spec)), cpu_gemm_panel_bytes(spec));
  }

  std::optional<std::string> backward_refusal(const AttentionSpec& spec) const override {
    return op_sequence_backward_refusal(name(), spec);
  }
  void forward_for_backward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v,
                            Tensor& out) override {
    probs_ = Tensor();
    probs_ = run_forward(spec, q, k, v, out);
  }
  // torch.compile's backward of the same graph, one CompiledFunctionBackward node: dP = dO·Vᵀ and
  // dV = Pᵀ·dO (GEMMs), one kernel dS = scale · P ⊙ (dP − rowsum(dP ⊙ P)) written over dP (the
  // mask needs no pass: a masked key's probability is 0, so is its gradient), dQ = dS·K and
  // dK = dSᵀ·Q (GEMMs); with GQA, dV and dK summed over each group of query heads. 5 pieces of work.
  void backward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv) override {
    (void)out;
    if (!probs_.defined() || probs_.shape() != std::vector<std::int64_t>{spec.batch, spec.heads, spec.seq_q, spec.seq_k} ||
        probs_.device() != spec.device) {
      throw Error("fused: forward_for_backward() must run for this shape before backward()");
    }
    ops::AutogradNode node("CompiledFunctionBackward");
    Tensor dk_target = kv_grad_target(spec, dk, spec.dtype), dv_target = kv_grad_target(spec, dv, spec.dtype);
    Tensor grad = ops::bmm(dout, v, /*transpose_b=*/true);
    ops::bmm_out(dv_target, ops::transpose_last2(probs_), dout, /*transpose_b=*/false);
    ops::scale_mask_softmax_backward_(grad, probs_, spec.softmax_scale());
    ops::bmm_out(dq, grad, k, /*transpose_b=*/false);
    ops::bmm_out(dk_target, ops::transpose_last2(grad), q, /*transpose_b=*/false);
    sum_kv_grad(spec, dv, dv_target);
    sum_kv_grad(spec, dk, dk_target);
  }
  void release_saved() override { probs_ = Tensor(); }
  std::int64_t backward_workspace_estimate(const AttentionSpec& spec) const override {
    // The kept probabilities and dP (dS overwrites it), GQA's expanded dK and dV, the GEMM panels.
    return sat_sum({sat_product({2, score_elements(spec), element_bytes(spec)}),
                    expanded_kv_grad_bytes(spec, element_bytes(spec)), cpu_gemm_panel_bytes(spec)});
  }

 private:
  // The forward; returns the probabilities (the scores' buffer, softmaxed in place).
  static Tensor run_forward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out) {
    Tensor scores = ops::matmul(q, k, /*transpose_b=*/true);
    ops::scale_mask_softmax_(scores, spec.softmax_scale(), spec.causal, spec.causal_offset());
    ops::matmul_out(out, scores, v, /*transpose_b=*/false);
    return scores;
  }
  Tensor probs_;  // [B,H,Sq,Sk], kept by forward_for_backward()
};

}  // namespace

std::unique_ptr<Variant> make_fused_variant() { return std::make_unique<FusedVariant>(); }

}  // namespace attnprof::variants
