// cudnn: cuDNN's fused SDPA (one kernel per forward, O(S·D) memory) through the backend graph API,
// CUDA only. This is the CPU-only form: the name exists so `--variant cudnn` gets a clear refusal.
#include "variants/cudnn.h"

#include <attnprof/error.h>

#include "variants/common.h"

namespace attnprof::variants {
namespace {

constexpr const char* kNeedsCuda =
    "--variant cudnn: needs --device cuda with a CUDA build and cuDNN (this build has no CUDA); "
    "variants for --device cpu: naive, inplace, math, fused, efficient, flash";

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
    return spec.batch * spec.heads * spec.seq_q * 4;  // the fp32 log-sum-exp cuDNN writes
  }
};

}  // namespace

std::unique_ptr<Variant> make_cudnn_variant() { return std::make_unique<CudnnVariant>(); }

}  // namespace attnprof::variants
