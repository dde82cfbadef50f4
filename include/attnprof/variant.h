#pragma once
// An attention variant: a named sequence of ops (or one fused kernel) computing one forward.
#include <attnprof/attention.h>
#include <attnprof/tensor.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attnprof {

class Variant {
 public:
  virtual ~Variant() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view summary() const = 0;  // one line: what it runs
  // What it runs for this spec (its device, mask): summary() unless the variant says more or less.
  virtual std::string describe(const AttentionSpec& spec) const {
    (void)spec;
    return std::string(summary());
  }
  // nullopt when the variant can run this spec; otherwise the reason, naming what is allowed and
  // the parameter by its AttentionSpec field ("head_dim 96: ..."); the CLI shows it as the flag.
  virtual std::optional<std::string> refusal(const AttentionSpec& spec) const = 0;
  // Work done once per shape, outside the timed forward (naive's causal mask, cuDNN's plan).
  virtual void prepare(const AttentionSpec& spec) { (void)spec; }
  // Writes out ([B,H,Sq,D] in spec.layout). Every element of out must be written.
  virtual void forward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v,
                       Tensor& out) = 0;
  // Bytes this variant needs beyond q, k, v and out for one forward (S×S buffers included).
  virtual std::int64_t workspace_estimate(const AttentionSpec& spec) const = 0;
};

// The registry of variants, built-in and out-of-tree, in registration order.
void register_variant(std::unique_ptr<Variant> variant);
Variant* find_variant(std::string_view name);  // nullptr when unknown
std::vector<Variant*> all_variants();
std::string variant_names();  // "naive|inplace|math|fused|efficient|flash|cudnn"
// "variant: unknown variant 'flsh' (did you mean 'flash'?); allowed: naive|inplace|..." for `parameter`.
std::string unknown_variant_message(std::string_view parameter, std::string_view name);

}  // namespace attnprof
