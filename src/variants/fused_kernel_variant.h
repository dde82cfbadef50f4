#pragma once
// efficient and flash: one fused kernel per forward; they differ in the kernel the backend runs.
#include <attnprof/variant.h>

namespace attnprof::variants {

class FusedKernelVariant : public Variant {
 public:
  std::optional<std::string> refusal(const AttentionSpec& spec) const override;
  std::int64_t workspace_estimate(const AttentionSpec& spec) const override;

 protected:
  // `text` plus, on the GPU at a head dim with no kernel of its own, how it runs there
  // ("; head_dim 33 runs on the D 64 kernel through a copy padded to 40 columns").
  static std::string with_head_dim_note(std::string text, const AttentionSpec& spec);
  virtual bool is_flash() const = 0;
};

}  // namespace attnprof::variants
