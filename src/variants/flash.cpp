// flash: FlashAttention-2 style, one piece of work per forward. On the CPU: 64 query rows × 256
// keys per tile, each head's K/V packed once into micro-kernel panels, a register-blocked AVX-512
// micro-kernel (fp32 FMA, or vdpbf16ps for bf16), softmax on the score tile while it is in cache,
// causal tiles past the diagonal skipped and only the crossing tile masked, each head's costliest
// q-blocks scheduled first (src/cpu/attention_tiles.h). Memory: packed K/V (O(threads·Sk·D), or
// O(B·Hkv·Sk·D) with fewer than 2 heads per thread) plus O(threads · tile). A fully masked row gives 0.
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
    return "FlashAttention-style fused kernel: tiled online softmax, causal tiles skipped (CPU: register-blocked "
           "AVX-512 / AMX tiles; sm80: FA2's mma.sync; sm90: FA3-shaped wgmma + TMA; the sm90 backward adds dQ "
           "with fp32 bulk reductions, not bit-deterministic, --deterministic runs the FA2 backward)";
  }
  std::string describe(const AttentionSpec& spec) const override {
    std::string text = spec.causal ? "FlashAttention-style fused kernel: tiled online softmax, causal tiles skipped"
                                   : "FlashAttention-style fused kernel: tiled online softmax";
    if (spec.device == Device::cpu) return text + " (register-blocked AVX-512 / AMX tiles)";
    text += " (sm80: FA2's mma.sync; sm90: FA3-shaped wgmma + TMA)";
    // The sm80 kernels' note; the sm_90a kernel's smallest is D 64, so head dims up to 32 run there.
    text = with_head_dim_note(text, spec);
    if (spec.head_dim <= 32) text += "; on sm90 the D 64 wgmma kernel";
    // Few query rows against many keys (a decode step) may take the split-KV kernel instead
    // (cuda/decode_plan.h decides with the GPU's SM count).
    if (spec.seq_q <= 16 && spec.seq_k >= 512 && (spec.head_dim == 64 || spec.head_dim == 128))
      text += "; a decode shape may run the split-KV decode kernel (splits merged by its last CTAs)";
    return text;
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
