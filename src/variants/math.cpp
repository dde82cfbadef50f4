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
#include <attnprof/profiler.h>

#include <cmath>
#include <limits>
#include <memory>
#include <utility>

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
    Tensor scores = ops::matmul(ops::mul(qf, sqrt_scale), ops::mul(kf, sqrt_scale), /*transpose_b=*/true,
                                /*allow_tensor_cores=*/false);
    if (spec.causal) ops::add_(scores, additive_mask);
    const Tensor probs = ops::safe_softmax(std::move(scores));
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
  }

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
};

}  // namespace

std::unique_ptr<Variant> make_math_variant() { return std::make_unique<MathVariant>(); }

}  // namespace attnprof::variants
