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

  // The backward pass (docs/backward.md). A run of --pass backward calls forward_for_backward()
  // outside the measured region, then backward() inside it; --pass train measures both.
  //
  // nullopt when backward() can run this spec (refusal() permitting); otherwise the reason, worded
  // as refusal()'s. By default: this variant has no backward on the spec's device.
  virtual std::optional<std::string> backward_refusal(const AttentionSpec& spec) const;
  // forward(), keeping what backward() reads (naive: the probabilities; a fused kernel: the
  // log-sum-exp) until the next forward_for_backward() or release_saved(). forward() keeps
  // nothing, so a forward pass allocates what it always did. By default: forward().
  virtual void forward_for_backward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v,
                                    Tensor& out) {
    forward(spec, q, k, v, out);
  }
  // dq ([B,H,Sq,D]), dk and dv ([B,Hkv,Sk,D]), in spec.layout, from dout ([B,H,Sq,D]) and what the
  // last forward_for_backward() of these q, k, v kept (out is its output). Every element of dq,
  // dk and dv must be written. By default: throws Error (backward_refusal() said why).
  virtual void backward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& out, const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv);
  // Work done once per shape before a backward or train pass, after prepare() and outside the
  // measured region (cuDNN's backward plan).
  virtual void prepare_backward(const AttentionSpec& spec) { (void)spec; }
  // Drops what forward_for_backward() kept.
  virtual void release_saved() {}
  // Bytes a backward needs beyond q, k, v, out, dout, dq, dk and dv: what its forward kept plus
  // the backward's own peak (the memory preflight of --pass backward|train). By default the
  // forward's workspace_estimate().
  virtual std::int64_t backward_workspace_estimate(const AttentionSpec& spec) const {
    return workspace_estimate(spec);
  }
};

// The registry of variants, built-in and out-of-tree, in registration order.
void register_variant(std::unique_ptr<Variant> variant);
Variant* find_variant(std::string_view name);  // nullptr when unknown
std::vector<Variant*> all_variants();
std::string variant_names();  // "naive|inplace|math|fused|efficient|flash|cudnn"
// "variant: unknown variant 'flsh' (did you mean 'flash'?); allowed: naive|inplace|..." for `parameter`.
std::string unknown_variant_message(std::string_view parameter, std::string_view name);

}  // namespace attnprof
