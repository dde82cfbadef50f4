#pragma once
// efficient and flash: one fused kernel per forward; they differ in the kernel the backend runs.
#include <attnprof/variant.h>

namespace attnprof::variants {

class FusedKernelVariant : public Variant {
 public:
  std::optional<std::string> refusal(const AttentionSpec& spec) const override;
  std::int64_t workspace_estimate(const AttentionSpec& spec) const override;

 protected:
  virtual bool is_flash() const = 0;
};

}  // namespace attnprof::variants
