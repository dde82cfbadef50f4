// The determinism check of a run (check_determinism, src/run/run_pass.cpp): a forward run compares
// the output, a backward or train run the output and dq, dk, dv too, each bit for bit with the
// first run, and names what differed. A variant that wraps naive's and perturbs one gradient from
// its second backward on must be caught with that gradient named; naive itself is bit-identical.
#include <attnprof/run.h>
#include <attnprof/variant.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ops/backend.h"
#include "report/glance.h"
#include "run/run_pass.h"

namespace attnprof {
namespace {

AttentionSpec tiny_spec() {
  AttentionSpec spec;
  spec.batch = 1;
  spec.heads = 2;
  spec.kv_heads = 1;
  spec.seq_q = spec.seq_k = 24;
  spec.head_dim = 16;
  spec.dtype = DType::fp32;
  spec.device = Device::cpu;
  return spec;
}

// naive's forward and backward, with one gradient (or the output) nudged by 1 in its first
// element on every call after the first: a nondeterministic kernel, as far as the check can see.
class Flaky : public Variant {
 public:
  explicit Flaky(std::string which) : which_(std::move(which)), naive_(*find_variant("naive")) {}
  std::string_view name() const override { return "flaky"; }
  std::string_view summary() const override { return "naive, nudged"; }
  std::optional<std::string> refusal(const AttentionSpec& spec) const override { return naive_.refusal(spec); }
  std::optional<std::string> backward_refusal(const AttentionSpec& spec) const override {
    return naive_.backward_refusal(spec);
  }
  std::int64_t workspace_estimate(const AttentionSpec& spec) const override { return naive_.workspace_estimate(spec); }
  void prepare(const AttentionSpec& spec) override { naive_.prepare(spec); }
  void forward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out) override {
    naive_.forward(spec, q, k, v, out);
    if (which_ == "out" && forwards_++ > 0) out.data<float>()[0] += 1.0f;
  }
  void forward_for_backward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v,
                            Tensor& out) override {
    naive_.forward_for_backward(spec, q, k, v, out);
  }
  void backward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv) override {
    naive_.backward(spec, q, k, v, out, dout, dq, dk, dv);
    if (backwards_++ == 0) return;
    Tensor& nudged = which_ == "dq" ? dq : which_ == "dk" ? dk : dv;
    if (which_ != "out") nudged.data<float>()[0] += 1.0f;
  }
  void release_saved() override { naive_.release_saved(); }

 private:
  std::string which_;
  Variant& naive_;
  int forwards_ = 0, backwards_ = 0;
};

RunResult check(Variant& variant, Pass pass, int runs) {
  const AttentionSpec spec = tiny_spec();
  variant.prepare(spec);
  PassTensors t = make_pass_tensors(spec, pass, 3);
  RunResult result;
  check_determinism(variant, spec, pass, t, ops::backend(spec.device), runs, result);
  variant.release_saved();
  return result;
}

TEST(DeterminismCheck, NamesTheGradientThatDiffered) {
  for (const char* which : {"dq", "dk", "dv"}) {
    Flaky flaky(which);
    const RunResult r = check(flaky, Pass::backward, 4);
    EXPECT_EQ(r.determinism_runs, 4);
    EXPECT_EQ(r.determinism_mismatches, 3) << which;  // runs 2, 3 and 4 differ from the first
    EXPECT_EQ(r.determinism_differed, std::vector<std::string>{which});
    EXPECT_EQ(report::differed_text(r), " (" + std::string(which) + ")");
  }
  Flaky train_dk("dk");
  EXPECT_EQ(check(train_dk, Pass::train, 3).determinism_differed, std::vector<std::string>{"dk"});
}

TEST(DeterminismCheck, ForwardRunComparesTheOutputOnly) {
  Flaky out("out");
  const RunResult r = check(out, Pass::forward, 3);
  EXPECT_EQ(r.determinism_mismatches, 2);
  EXPECT_EQ(r.determinism_differed, std::vector<std::string>{"out"});
  // A gradient nudge is never seen by a forward run: it runs no backward.
  Flaky dk("dk");
  EXPECT_EQ(check(dk, Pass::forward, 3).determinism_mismatches, 0);
}

TEST(DeterminismCheck, NaiveBackwardRunIsBitIdentical) {
  RunOptions options;
  options.variant = "naive";
  options.spec = tiny_spec();
  options.pass = Pass::train;
  options.profile = false;
  options.timed_forwards = 1;
  options.min_time_s = 0;
  options.out_dir.clear();
  options.determinism_runs = 4;
  const RunResult r = run_variant(options);
  EXPECT_EQ(r.determinism_runs, 4);
  EXPECT_EQ(r.determinism_mismatches, 0);
  EXPECT_TRUE(r.determinism_differed.empty());
  EXPECT_EQ(report::differed_text(r), "");
}

}  // namespace
}  // namespace attnprof
