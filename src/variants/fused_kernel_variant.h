#pragma once
// efficient and flash: one fused kernel per forward; they differ in the kernel the backend runs.
#include <attnprof/variant.h>

namespace attnprof::variants {

class FusedKernelVariant : public Variant {
 public:
  std::optional<std::string> refusal(const AttentionSpec& spec) const override;
  std::int64_t workspace_estimate(const AttentionSpec& spec) const override;

  // The backward (FlashAttention-2: ops::flash_attention_backward and efficient_attention_backward;
  // on the GPU the Δ, dK/dV and dQ kernels of src/cuda/attention_backward.h, which use no atomics,
  // so their gradients are bit-identical run to run, except flash on sm_90a: its wgmma kernel,
  // src/cuda/hopper/flash_bwd.h, sums dQ with fp32 bulk reductions): the forward keeps its fp32 log-sum-exp per
  // query row (B·H·Sq·4 bytes) and the backward recomputes the scores from it, so no S×S tensor is
  // ever kept. The backward takes every spec the forward takes (on the GPU every head dim 1..256).
  std::optional<std::string> backward_refusal(const AttentionSpec& spec) const override;
  void forward_for_backward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v,
                            Tensor& out) override;
  void backward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv) override;
  void release_saved() override { lse_ = Tensor(); }
  std::int64_t backward_workspace_estimate(const AttentionSpec& spec) const override;

 protected:
  // `text` plus, on the GPU at a head dim with no kernel of its own, how it runs there
  // ("; head_dim 33 runs on the D 64 kernel through a copy padded to 40 columns").
  static std::string with_head_dim_note(std::string text, const AttentionSpec& spec);
  virtual bool is_flash() const = 0;

 private:
  Tensor lse_;  // fp32 [B,H,Sq], kept by forward_for_backward()
};

}  // namespace attnprof::variants
