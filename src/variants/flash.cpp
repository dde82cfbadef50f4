// flash: FlashAttention-2 style, one piece of work per forward. On the CPU: 128×128 tiles, K/V
// packed once per kv head into micro-kernel panels, register-blocked AVX-512 micro-kernel (fp32
// FMA, or vdpbf16ps for bf16), softmax on the score tile while it is in L1, causal tiles past
// the diagonal skipped and only diagonal tiles masked, heaviest q-blocks scheduled first.
// Memory O(B·Hkv·Sk·D) for the packed K/V plus O(threads · tile). A fully masked row gives 0.
#include <memory>

#include "ops/ops.h"
#include "variants/builtin_list.h"
#include "variants/fused_kernel_variant.h"

namespace attnprof::variants {
namespace {

class FlashVariant final : public FusedKernelVariant {
 public:
  std::string_view name() const override { return "flash"; }
  std::string_view summary() const override {
    return "FlashAttention-2 style fused kernel: tiled online softmax, register-blocked micro-kernel, causal tiles "
           "skipped";
  }
  void forward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out) override {
    ops::flash_attention_out(spec, out, q, k, v);
  }

 protected:
  bool is_flash() const override { return true; }
};

}  // namespace

std::unique_ptr<Variant> make_flash_variant() { return std::make_unique<FlashVariant>(); }

}  // namespace attnprof::variants
