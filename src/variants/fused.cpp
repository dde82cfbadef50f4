// fused: what torch.compile makes of naive — gemm (q·kᵀ), one kernel that scales, masks causally
// and softmaxes each row in one pass, gemm (p·v). 3 pieces of work per forward, causal or not.
// Memory: one S×S buffer (the softmax runs in place on the scores, as inductor reuses it). The mask
// honours --causal-align (row i keeps keys j <= i + Sk − Sq bottom-right); a row with every key
// masked gives 0.
#include <memory>

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
    Tensor scores = ops::matmul(q, k, /*transpose_b=*/true);
    ops::scale_mask_softmax_(scores, spec.softmax_scale(), spec.causal, spec.causal_offset());
    ops::matmul_out(out, scores, v, /*transpose_b=*/false);
  }
  std::int64_t workspace_estimate(const AttentionSpec& spec) const override {
    return sat_add(sat_mul(score_elements(spec), element_bytes(spec)), cpu_gemm_panel_bytes(spec));
  }
};

}  // namespace

std::unique_ptr<Variant> make_fused_variant() { return std::make_unique<FusedVariant>(); }

}  // namespace attnprof::variants
