#pragma once
#include <attnprof/variant.h>

namespace attnprof::variants {

// naive (in_place = false) and inplace (masked_fill_ instead of masked_fill): see naive.cpp.
class NaiveVariant final : public Variant {
 public:
  explicit NaiveVariant(bool in_place);
  std::string_view name() const override;
  std::string_view summary() const override;
  std::string describe(const AttentionSpec& spec) const override;
  std::optional<std::string> refusal(const AttentionSpec& spec) const override;
  void prepare(const AttentionSpec& spec) override;
  void forward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out) override;
  std::int64_t workspace_estimate(const AttentionSpec& spec) const override;
  std::optional<std::string> backward_refusal(const AttentionSpec& spec) const override;
  void forward_for_backward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v,
                            Tensor& out) override;
  void backward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv) override;
  void release_saved() override { probs_ = Tensor(); }
  std::int64_t backward_workspace_estimate(const AttentionSpec& spec) const override;

 private:
  // The forward; keeps the softmax's output in *probs when probs is given (what SoftmaxBackward0
  // and the P·V BmmBackward0 read).
  void run_forward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out,
                   Tensor* probs);
  bool in_place_;
  Tensor probs_;  // [B,H,Sq,Sk], kept by forward_for_backward()
  Tensor mask_;  // bool [Sq, Sk], true above the diagonal (masked), built by prepare()
  AttentionSpec prepared_;
};

}  // namespace attnprof::variants
