// cudnn: cuDNN's fused SDPA (one kernel per forward, O(S·D) memory) through the backend graph API,
// CUDA only. In a CUDA build the body is src/cuda/cudnn_sdpa.cpp (the 14-op causal graph or the
// SDPA_FWD operation, plans cached), reached through ops::Backend; the CPU-only form keeps the
// name so `--variant cudnn` gets a clear refusal.
#include "variants/cudnn.h"

#include <attnprof/error.h>
#include <attnprof/profiler.h>

#include <cstdio>
#include <fmt/format.h>

#include "ops/backend.h"
#include "variants/common.h"

namespace attnprof::variants {
namespace {

#ifdef ATTNPROF_HAVE_CUDA

class CudnnVariant final : public Variant {
 public:
  std::string_view name() const override { return "cudnn"; }
  std::string_view summary() const override {
    return "cuDNN fused SDPA through the backend graph API (14-op causal graph / SDPA_FWD), plans cached per shape";
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
    return 256;  // the plan's workspace (a tile counter the kernel memsets); no S² and no LSE in inference
  }
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
