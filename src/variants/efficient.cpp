// efficient: the memory-efficient fused kernel (xformers/CUTLASS style): one piece of work per
// forward. On the CPU: 64-query × 64-key tiles, K/V packed tile by tile as each q-block reaches
// them, an online softmax, no S×S buffer (memory O(threads · tile)); causal tiles past the
// diagonal are skipped. A row with every key masked gives 0.
#include <attnprof/error.h>

#include <memory>
#include <vector>

#include "ops/backend.h"
#include "ops/fused_head_dim.h"
#include "ops/ops.h"
#include "variants/builtin_list.h"
#include "variants/common.h"
#include "variants/fused_kernel_variant.h"

namespace attnprof::variants {

std::optional<std::string> FusedKernelVariant::refusal(const AttentionSpec& spec) const {
  if (auto why = common_refusal(name(), spec)) return why;
  return ops::backend(spec.device).fused_refusal(spec);
}

std::int64_t FusedKernelVariant::workspace_estimate(const AttentionSpec& spec) const {
  // A device with no backend here (no GPU) is estimated as its fused kernels' fp32 log-sum-exp.
  if (!ops::has_backend(spec.device)) return ops::Backend::log_sum_exp_bytes(spec);
  return ops::backend(spec.device).fused_workspace_bytes(spec, is_flash());
}

std::string FusedKernelVariant::with_head_dim_note(std::string text, const AttentionSpec& spec) {
  if (spec.device != Device::cuda) return text;
  if (auto note = ops::fused_head_dim_note(spec.head_dim)) text += "; " + *note;
  return text;
}

std::optional<std::string> FusedKernelVariant::backward_refusal(const AttentionSpec& spec) const {
  return refusal(spec);  // the backward takes every spec the forward takes
}

void FusedKernelVariant::forward_for_backward(const AttentionSpec& spec, const Tensor& q, const Tensor& k,
                                              const Tensor& v, Tensor& out) {
  lse_ = Tensor::empty({spec.batch, spec.heads, spec.seq_q}, DType::fp32, spec.device);
  if (is_flash()) {
    ops::flash_attention_out(spec, out, q, k, v, &lse_);
  } else {
    ops::efficient_attention_out(spec, out, q, k, v, &lse_);
  }
}

// One autograd node, named as PyTorch's SDPA backward nodes are (the CPU's flash is its own op).
void FusedKernelVariant::backward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& out, const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv) {
  if (!lse_.defined() || lse_.shape() != std::vector<std::int64_t>{spec.batch, spec.heads, spec.seq_q} ||
      lse_.device() != spec.device) {
    throw Error(std::string(name()) + ": forward_for_backward() must run for this shape before backward()");
  }
  if (is_flash()) {
    ops::AutogradNode node(spec.device == Device::cpu ? "ScaledDotProductFlashAttentionForCpuBackward0"
                                                      : "ScaledDotProductFlashAttentionBackward0");
    ops::flash_attention_backward(spec, q, k, v, out, lse_, dout, dq, dk, dv);
  } else {
    ops::AutogradNode node("ScaledDotProductEfficientAttentionBackward0");
    ops::efficient_attention_backward(spec, q, k, v, out, lse_, dout, dq, dk, dv);
  }
}

std::int64_t FusedKernelVariant::backward_workspace_estimate(const AttentionSpec& spec) const {
  return sat_add(ops::Backend::log_sum_exp_bytes(spec), ops::fused_backward_workspace_bytes(spec, is_flash()));
}

namespace {

class EfficientVariant final : public FusedKernelVariant {
 public:
  std::string_view name() const override { return "efficient"; }
  std::string_view summary() const override {
    return "memory-efficient fused kernel: 64×64 tiles, online softmax, no S×S buffer";
  }
  std::string describe(const AttentionSpec& spec) const override {
    // On the GPU the D 32 and 96 kernels are the tilings efficient shares with flash
    // (src/cuda/attention_shared_dims.cu); every other runs 64×64 tiles.
    const auto route = ops::fused_head_dim_route(spec.head_dim);
    const std::int64_t kernel_dim = spec.device == Device::cuda && route ? route->kernel_dim : 0;
    const char* tiles = kernel_dim == 32 ? "128×128" : kernel_dim == 96 ? "128×64" : "64×64";
    return with_head_dim_note(std::string("memory-efficient fused kernel: ") + tiles +
                                  " tiles, online softmax, no S×S buffer",
                              spec);
  }
  void forward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out) override {
    ops::efficient_attention_out(spec, out, q, k, v);
  }

 protected:
  bool is_flash() const override { return false; }
};

}  // namespace

std::unique_ptr<Variant> make_efficient_variant() { return std::make_unique<EfficientVariant>(); }

}  // namespace attnprof::variants
