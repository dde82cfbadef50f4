// cudnn: cuDNN's fused SDPA (one kernel per forward, O(S·D) memory) through the backend graph API,
// CUDA only. In a CUDA build the body is src/cuda/cudnn_sdpa.cpp (the 14-op causal graph or the
// SDPA_FWD operation, plans cached) and, for the backward, src/cuda/cudnn_sdpa_backward.cpp (the
// SDPA_BWD operation without a mask, the composite graph of cuDNN's frontend SDPA backward with
// the causal mask, both from the forward's Stats), reached through
// ops::Backend; the CPU-only form keeps the name so `--variant cudnn` gets a clear refusal.
#include "variants/cudnn.h"

#include <attnprof/error.h>
#include <attnprof/profiler.h>

#include <cstdio>
#include <fmt/format.h>

#include "core/saturating.h"
#include "ops/backend.h"
#include "ops/ops.h"
#include "variants/common.h"

namespace attnprof::variants {
namespace {

#ifdef ATTNPROF_HAVE_CUDA

class CudnnVariant final : public Variant {
 public:
  std::string_view name() const override { return "cudnn"; }
  std::string_view summary() const override {
    return "cuDNN fused SDPA through the backend graph API (14-op causal graph / SDPA_FWD; backward: SDPA_BWD, "
           "or the frontend's SDPA backward graph when causal, from the Stats, dQ summed with atomics, not "
           "bit-deterministic), plans cached per shape";
  }
  std::optional<std::string> refusal(const AttentionSpec& spec) const override {
    if (spec.device != Device::cuda)
      return std::string("runs on device cuda only; variants for device cpu: naive, inplace, math, fused, efficient, "
                         "flash");
    if (spec.dtype != DType::bf16 && spec.dtype != DType::fp16)
      return fmt::format("dtype {}: the cudnn variant takes bf16, fp16", dtype_name(spec.dtype));
    if (spec.head_dim % 8 != 0 || spec.head_dim > 256)
      return fmt::format("head_dim {}: the cudnn variant takes multiples of 8 up to 256", spec.head_dim);
    return common_refusal("cudnn", spec);
  }
  // The plan (cuDNN compiles its kernel here) is built outside the timed forward; its cost is
  // printed once, apart from the per-call time.
  void prepare(const AttentionSpec& spec) override {
    if (auto plan = ops::backend(Device::cuda).cudnn_sdpa_prepare(spec)) std::fprintf(stderr, "cudnn: %s\n", plan->c_str());
  }
  void forward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out) override {
    profiler::Range r(trace::Category::cpu_op, "aten::scaled_dot_product_attention", {&q, &k, &v});
    profiler::Range inner(trace::Category::cpu_op, "aten::_scaled_dot_product_cudnn_attention", {&q, &k, &v});
    ops::backend(Device::cuda).cudnn_sdpa_forward(spec, out, q, k, v);
  }
  std::int64_t workspace_estimate(const AttentionSpec& spec) const override {
    (void)spec;
    return kForwardWorkspace;
  }

  // The backward: the forward keeps cuDNN's fp32 Stats (the natural-log log-sum-exp per query
  // row, B·H·Sq·4 bytes) and cuDNN's fused backward recomputes the scores from it. dQ is summed
  // in fp32 with atomics, so the backward's dQ is not bit-deterministic from run to run.
  std::optional<std::string> backward_refusal(const AttentionSpec& spec) const override {
    if (spec.device != Device::cuda) return Variant::backward_refusal(spec);
    if (auto why = refusal(spec)) return why;
    if (spec.head_dim > 128)
      return fmt::format("head_dim {}: the cudnn variant's backward takes multiples of 8 up to 128", spec.head_dim);
    if (spec.causal && spec.causal_offset() < 0)  // src/cuda/cudnn_sdpa_backward.cpp says why
      return fmt::format("seq {} > seq_k {} with causal bottom-right (rows that see no key): the cudnn variant's "
                         "backward takes seq <= seq_k there; efficient and flash take it",
                         spec.seq_q, spec.seq_k);
    return std::nullopt;
  }
  void prepare_backward(const AttentionSpec& spec) override {
    if (auto plan = ops::backend(Device::cuda).cudnn_sdpa_backward_prepare(spec))
      std::fprintf(stderr, "cudnn: %s\n", plan->c_str());
  }
  void forward_for_backward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v,
                            Tensor& out) override {
    stats_ = Tensor::empty({spec.batch, spec.heads, spec.seq_q}, DType::fp32, Device::cuda);
    profiler::Range r(trace::Category::cpu_op, "aten::scaled_dot_product_attention", {&q, &k, &v});
    profiler::Range inner(trace::Category::cpu_op, "aten::_scaled_dot_product_cudnn_attention", {&q, &k, &v});
    ops::backend(Device::cuda).cudnn_sdpa_forward_with_stats(spec, out, q, k, v, stats_);
  }
  // One autograd node, named as PyTorch's cuDNN SDPA backward is.
  void backward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv) override {
    if (!stats_.defined() || stats_.shape() != std::vector<std::int64_t>{spec.batch, spec.heads, spec.seq_q})
      throw Error("cudnn: forward_for_backward() must run for this shape before backward()");
    ops::AutogradNode node("ScaledDotProductCudnnAttentionBackward0");
    profiler::Range r(trace::Category::cpu_op, "aten::_scaled_dot_product_cudnn_attention_backward",
                      {&dout, &q, &k, &v, &out});
    ops::backend(Device::cuda).cudnn_sdpa_backward(spec, dq, dk, dv, q, k, v, out, stats_, dout);
  }
  void release_saved() override { stats_ = Tensor(); }
  std::int64_t backward_workspace_estimate(const AttentionSpec& spec) const override {
    return sat_add(sat_add(kForwardWorkspace, ops::Backend::log_sum_exp_bytes(spec)),
                   ops::backend(Device::cuda).cudnn_sdpa_backward_workspace_bytes(spec));
  }

 private:
  static constexpr std::int64_t kForwardWorkspace = 256;  // the forward plan's (a tile counter the kernel memsets)
  Tensor stats_;  // fp32 [B,H,Sq], kept by forward_for_backward()
};

#else

constexpr const char* kNeedsCuda =
    "variant cudnn: needs device cuda with a CUDA build and cuDNN (this build has no CUDA); "
    "variants for device cpu: naive, inplace, math, fused, efficient, flash";

class CudnnVariant final : public Variant {
 public:
  std::string_view name() const override { return "cudnn"; }
  std::string_view summary() const override { return "cuDNN fused SDPA (CUDA only)"; }
  std::optional<std::string> refusal(const AttentionSpec& spec) const override {
    (void)spec;
    return std::string(kNeedsCuda);
  }
  void forward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out) override {
    (void)spec, (void)q, (void)k, (void)v, (void)out;
    throw UsageError(kNeedsCuda);
  }
  std::int64_t workspace_estimate(const AttentionSpec& spec) const override {
    return sat_product({spec.batch, spec.heads, spec.seq_q, 4});  // the fp32 log-sum-exp cuDNN writes
  }
};

#endif

}  // namespace

std::unique_ptr<Variant> make_cudnn_variant() { return std::make_unique<CudnnVariant>(); }

}  // namespace attnprof::variants
