// The passes of run_variant (run/run_pass.cpp): the ranges a backward records, in the order
// PyTorch's autograd runs the nodes, worked out by hand from naive's op sequence; what a train
// step counts; the refusal of a variant without a backward.
#include <attnprof/error.h>
#include <attnprof/run.h>
#include <gtest/gtest.h>

#include <attnprof/variant.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

using namespace attnprof;

namespace {

RunOptions naive_options(Pass pass, std::int64_t kv_heads) {
  RunOptions options;
  options.variant = "naive";
  options.pass = pass;
  options.spec.batch = 1;
  options.spec.heads = 2;
  options.spec.kv_heads = kv_heads;
  options.spec.seq_q = options.spec.seq_k = 24;
  options.spec.head_dim = 16;
  options.spec.dtype = DType::fp32;
  options.spec.device = Device::cpu;
  options.schedule = profiler::Schedule{0, 0, 2, 1};
  options.min_time_s = 0;  // exactly the counts asked for
  options.out_dir.clear();
  return options;
}

// The cpu_op ranges inside the first range called `range`, in start order (an enclosing range
// before the ranges it holds).
std::vector<std::string> ops_inside(const trace::Trace& trace, const std::string& range) {
  const auto first = std::find_if(trace.events.begin(), trace.events.end(), [&](const trace::Event& e) {
    return e.category == trace::Category::user_annotation && e.name == range;
  });
  if (first == trace.events.end()) return {};
  std::vector<const trace::Event*> inside;
  for (const trace::Event& e : trace.events) {
    if (e.category == trace::Category::cpu_op && e.ts_ns >= first->ts_ns && e.end_ns() <= first->end_ns()) {
      inside.push_back(&e);
    }
  }
  std::stable_sort(inside.begin(), inside.end(), [](const trace::Event* a, const trace::Event* b) {
    return a->ts_ns != b->ts_ns ? a->ts_ns < b->ts_ns : a->dur_ns > b->dur_ns;
  });
  std::vector<std::string> names;
  for (const trace::Event* e : inside) names.push_back(e->name);
  return names;
}

const std::string kEval = "autograd::engine::evaluate_function: ";

// naive's forward: scores = (q·kᵀ)·scale, masked_fill(mask, −inf), P = softmax, out = P·v. Its
// autograd graph, walked back from out: BmmBackward0 of P·v (dP = dO·vᵀ, then dV = Pᵀ·dO),
// SoftmaxBackward0, MaskedFillBackward0 (out of place: clone → copy_, then masked_fill_),
// MulBackward0, BmmBackward0 of q·kᵀ (dQ, then dK); each node inside its evaluate_function range.
std::vector<std::string> naive_backward_ops() {
  return {kEval + "BmmBackward0",        "BmmBackward0",        "aten::bmm",     "aten::bmm",
          kEval + "SoftmaxBackward0",    "SoftmaxBackward0",    "aten::_softmax_backward_data",
          kEval + "MaskedFillBackward0", "MaskedFillBackward0", "aten::masked_fill", "aten::clone", "aten::copy_",
          "aten::masked_fill_",
          kEval + "MulBackward0",        "MulBackward0",        "aten::mul",
          kEval + "BmmBackward0",        "BmmBackward0",        "aten::bmm",     "aten::bmm"};
}

TEST(RunPass, NaiveBackwardTraceHasPyTorchsNodesInOrder) {
  const RunResult result = run_variant(naive_options(Pass::backward, 2));
  ASSERT_TRUE(result.trace.has_value());
  EXPECT_EQ(ops_inside(*result.trace, "attn_bwd"), naive_backward_ops());
  // The measured range holds the backward only: 8 pieces of work (4 GEMMs, the softmax
  // backward, the clone's copy, the fill, the mul); the forward ran in attn_fwd before it.
  EXPECT_EQ(result.kernels_per_forward, 8.0);
  EXPECT_EQ(result.pass, Pass::backward);
  EXPECT_DOUBLE_EQ(result.flops, 2.5 * result.spec.flops());
  EXPECT_LE(result.grad_rel_err, 1e-5);
  EXPECT_EQ(result.grad_rel_err, std::max({result.grad_rel_err_dq, result.grad_rel_err_dk, result.grad_rel_err_dv}));
}

// GQA (2 query heads on 1 key/value head): the same nodes, then the backward of the k and v
// expansion, dV's group sum before dK's (ExpandBackward0 → aten::sum each).
TEST(RunPass, NaiveGqaBackwardSumsDvThenDk) {
  const RunResult result = run_variant(naive_options(Pass::backward, 1));
  ASSERT_TRUE(result.trace.has_value());
  std::vector<std::string> expected = naive_backward_ops();
  for (int i = 0; i < 2; ++i) {
    for (const std::string& name : {kEval + "ExpandBackward0", std::string("ExpandBackward0"), std::string("aten::sum")}) {
      expected.push_back(name);
    }
  }
  EXPECT_EQ(ops_inside(*result.trace, "attn_bwd"), expected);
  EXPECT_EQ(result.kernels_per_forward, 10.0);
  EXPECT_LE(result.grad_rel_err, 1e-5);
}

// A training step is the forward (6 pieces of work causal: gemm, mul, copy, masked_fill,
// softmax, gemm) and its backward (8).
TEST(RunPass, TrainStepCountsForwardAndBackward) {
  RunOptions options = naive_options(Pass::train, 2);
  const RunResult result = run_variant(options);
  EXPECT_EQ(result.kernels_per_forward, 14.0);
  EXPECT_EQ(result.time.count, 2);
  EXPECT_DOUBLE_EQ(result.flops, 3.5 * result.spec.flops());
  options.profile = false;
  options.timed_forwards = 3;
  const RunResult wall = run_variant(options);
  EXPECT_EQ(wall.time.count, 3);
  EXPECT_GT(wall.median_ns, 0.0);
}

// compare's later rounds measure again without the fp64 gradient check (the first round's stands);
// a dump still gets checked gradients.
TEST(RunPass, LaterRoundsSkipTheGradientCheck) {
  const RunOptions first = naive_options(Pass::backward, 2);
  RunOptions later = later_round(first);
  EXPECT_FALSE(later.check_gradients);
  const RunResult result = run_variant(later);
  EXPECT_EQ(result.grad_rel_err, 0.0);
  EXPECT_EQ(result.time.count, 2);
}

// A forward run is unchanged: no gradient check, the forward's work.
TEST(RunPass, ForwardRunHasNoGradients) {
  const RunResult result = run_variant(naive_options(Pass::forward, 2));
  EXPECT_EQ(result.kernels_per_forward, 6.0);
  EXPECT_EQ(result.grad_rel_err, 0.0);
  EXPECT_DOUBLE_EQ(result.flops, result.spec.flops());
}

// An out-of-tree variant that defines only a forward (fused's): Variant's default backward_refusal.
class ForwardOnlyVariant final : public Variant {
 public:
  std::string_view name() const override { return "forward_only"; }
  std::string_view summary() const override { return "fused's forward, no backward"; }
  std::optional<std::string> refusal(const AttentionSpec& spec) const override {
    return find_variant("fused")->refusal(spec);
  }
  void forward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out) override {
    find_variant("fused")->forward(spec, q, k, v, out);
  }
  std::int64_t workspace_estimate(const AttentionSpec& spec) const override {
    return find_variant("fused")->workspace_estimate(spec);
  }
};

TEST(RunPass, VariantWithoutBackwardIsRefused) {
  register_variant(std::make_unique<ForwardOnlyVariant>());
  RunOptions options = naive_options(Pass::forward, 2);
  options.variant = "forward_only";
  EXPECT_LE(run_variant(options).rel_err, 1e-5) << "its forward runs";
  for (Pass pass : {Pass::backward, Pass::train}) {
    options.pass = pass;
    try {
      (void)run_variant(options);
      ADD_FAILURE() << "forward_only has no backward";
    } catch (const UsageError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what, "pass " + std::string(pass_name(pass)) +
                          ": device cpu: the forward_only variant has no backward on this device; allowed on device "
                          "cpu: pass forward; variant naive|inplace|math|fused|efficient|flash");
    }
  }
}

// Determinism under a backward pass compares the gradients: naive's CPU backward repeats bit for
// bit; a variant whose dQ moves by one step each call (as atomics reorder sums) differs on every
// run after the first.
class DriftingBackwardVariant final : public Variant {
 public:
  std::string_view name() const override { return "drifting_backward"; }
  std::string_view summary() const override { return "naive, its dQ[0] moved by 2^-20 per backward"; }
  std::optional<std::string> refusal(const AttentionSpec& spec) const override { return naive().refusal(spec); }
  std::optional<std::string> backward_refusal(const AttentionSpec& spec) const override {
    return naive().backward_refusal(spec);
  }
  void forward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out) override {
    naive().forward(spec, q, k, v, out);
  }
  void forward_for_backward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v,
                            Tensor& out) override {
    naive().forward_for_backward(spec, q, k, v, out);
  }
  void backward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv) override {
    naive().backward(spec, q, k, v, out, dout, dq, dk, dv);
    static_cast<float*>(dq.raw())[0] += static_cast<float>(++calls_) / (1 << 20);
  }
  void release_saved() override { naive().release_saved(); }
  std::int64_t workspace_estimate(const AttentionSpec& spec) const override {
    return naive().workspace_estimate(spec);
  }
  std::int64_t backward_workspace_estimate(const AttentionSpec& spec) const override {
    return naive().backward_workspace_estimate(spec);
  }

 private:
  static Variant& naive() { return *find_variant("naive"); }
  int calls_ = 0;
};

TEST(RunPass, BackwardDeterminismComparesTheGradients) {
  register_variant(std::make_unique<DriftingBackwardVariant>());
  RunOptions options = naive_options(Pass::backward, 2);
  options.profile = false;
  options.timed_forwards = 1;
  options.determinism_runs = 4;
  const RunResult naive = run_variant(options);
  EXPECT_EQ(naive.determinism_runs, 4);
  EXPECT_EQ(naive.determinism_mismatches, 0) << "naive's CPU backward repeats bit for bit";
  options.variant = "drifting_backward";
  const RunResult drifting = run_variant(options);
  EXPECT_EQ(drifting.determinism_runs, 4);
  EXPECT_EQ(drifting.determinism_mismatches, 3) << "each backward after the first moved dQ[0]";
}

}  // namespace

namespace attnprof {
namespace {

// A training step's peak counts what its forward keeps for the backward (naive: the probabilities
// P, B·H·Sq·Sk fp32 = 1·2·24·24·4 = 4608 bytes) on top of the backward's own; the backward pass
// alone does not count it (its forward ran before the measured region).
TEST(RunPass, TrainPeakCountsWhatTheForwardKeeps) {
  RunOptions backward = naive_options(Pass::backward, 2);
  backward.profile = false;
  backward.timed_forwards = 1;
  RunOptions train = backward;
  train.pass = Pass::train;
  const RunResult b = run_variant(backward);
  const RunResult t = run_variant(train);
  EXPECT_GE(t.peak_extra_bytes, b.peak_extra_bytes + 4608) << "backward " << b.peak_extra_bytes << ", train "
                                                          << t.peak_extra_bytes;
}

}  // namespace
}  // namespace attnprof
