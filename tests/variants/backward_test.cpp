// The backward of every CPU variant (the op sequences of naive, inplace, math, fused; the
// FlashAttention-2 kernels of efficient and flash, kept log-sum-exp in between) against the fp64
// reference gradients (reference_backward.h): ‖x − ref‖/‖ref‖ ≤ 1e-5 (fp32) or 1e-2
// (bf16, fp16) for each of dQ, dK, dV.
//
// Coverage: every variant × dtype × (Sq, Sk) ∈ {(1, 1), (17, 17), (77, 77), (77, 128), (128, 77)}
// × mask (none, causal top-left, causal bottom-right), with GQA (H = 4; Hkv = 4, 2, 1), the layout
// and D ∈ {32, 64, 80, 128} rotating so each meets every variant and dtype. Every gradient buffer
// is NaN-poisoned first and must come back with no poison left.
//
// Causal bottom-right with Sq > Sk leaves the first Sq − Sk query rows without a key. naive and
// inplace then have NaN probabilities in those rows, as PyTorch's naive module does: their dQ and
// dK are still exact (the masked_fill backward zeroes those rows' dS) and dV = Pᵀ·dO is all NaN,
// PyTorch's answer too. The others give 0 probabilities there, and all three match.
#include <attnprof/attention.h>
#include <attnprof/error.h>
#include <attnprof/variant.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>
#include <vector>

#include "ops/backend.h"
#include "variants/cpu_case.h"
#include "variants/reference.h"
#include "variants/reference_backward.h"

namespace attnprof {
namespace {

struct Case {
  std::string variant;
  DType dtype;
  Layout layout;
  bool causal;
  CausalAlign align;
  std::int64_t kv_heads, seq_q, seq_k, head_dim;
  std::int64_t batch = 2, heads = 4;
};

std::string case_name(const Case& c) {
  const std::string mask = !c.causal ? "full" : c.align == CausalAlign::top_left ? "topleft" : "bottomright";
  return fmt::format("{}_{}_{}_{}_kv{}_sq{}_sk{}_d{}", c.variant, dtype_name(c.dtype), layout_name(c.layout), mask,
                     c.kv_heads, c.seq_q, c.seq_k, c.head_dim);
}

std::vector<Case> all_cases() {
  const std::vector<std::int64_t> head_dims{32, 64, 80, 128};
  const std::vector<std::int64_t> kv_heads{4, 2, 1};
  std::vector<Case> cases;
  std::size_t rotate = 0;
  for (const char* variant : {"naive", "inplace", "math", "fused", "efficient", "flash"}) {
    for (DType dtype : {DType::bf16, DType::fp16, DType::fp32}) {
      for (auto [sq, sk] : std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 1}, {17, 17}, {77, 77}, {77, 128},
                                                                             {128, 77}}) {
        for (int mask = 0; mask < 3; ++mask) {
          const std::size_t r = rotate++;
          cases.push_back({variant, dtype, r % 2 ? Layout::bshd : Layout::bhsd, mask > 0,
                           mask == 2 ? CausalAlign::bottom_right : CausalAlign::top_left, kv_heads[(r + r / 3) % 3], sq, sk,
                           head_dims[(r / 2) % 4]});
        }
      }
    }
  }
  return cases;
}

AttentionSpec spec_of(const Case& c) { return testing::cpu_spec(c); }
using testing::tolerance;

class VariantBackward : public ::testing::TestWithParam<Case> {};

TEST_P(VariantBackward, MatchesFp64ReferenceGradients) {
  const Case& c = GetParam();
  const AttentionSpec spec = spec_of(c);
  spec.validate();
  Variant* variant = find_variant(c.variant);
  ASSERT_NE(variant, nullptr);
  ASSERT_FALSE(variant->backward_refusal(spec).has_value()) << variant->backward_refusal(spec).value_or("");
  const AttentionInputs in = make_inputs(spec, 11);
  const Tensor dout = make_output_grad(spec, 11);
  Tensor out = make_output(spec);
  AttentionGrads g = make_grads(spec);
  variants::poison_nan(g.dq);
  variants::poison_nan(g.dk);
  variants::poison_nan(g.dv);
  variant->prepare(spec);
  variant->forward_for_backward(spec, in.q, in.k, in.v, out);
  variant->backward(spec, in.q, in.k, in.v, out, dout, g.dq, g.dk, g.dv);
  variant->release_saved();
  EXPECT_EQ(variants::count_poison(g.dq), 0) << "dq elements never written";
  EXPECT_EQ(variants::count_poison(g.dk), 0) << "dk elements never written";
  EXPECT_EQ(variants::count_poison(g.dv), 0) << "dv elements never written";
  const variants::GradientErrors err = variants::check_gradients(spec, in.q, in.k, in.v, dout, g.dq, g.dk, g.dv);
  const double tol = tolerance(c.dtype);
  const bool nan_rows = variants::fully_masked_rows_per_head(spec) > 0;
  const bool naive_family = c.variant == "naive" || c.variant == "inplace";
  EXPECT_EQ(variants::count_nan(g.dq), 0);
  EXPECT_EQ(variants::count_nan(g.dk), 0);
  EXPECT_LE(err.dq, tol) << "dq";
  EXPECT_LE(err.dk, tol) << "dk";
  if (nan_rows && naive_family) {
    EXPECT_EQ(variants::count_nan(g.dv), g.dv.numel()) << "PyTorch's naive module's dV is all NaN here";
  } else {
    EXPECT_EQ(variants::count_nan(g.dv), 0);
    EXPECT_LE(err.dv, tol) << "dv";
  }
  ::testing::Test::RecordProperty("grad_rel_err", fmt::format("{:.3g} {:.3g} {:.3g}", err.dq, err.dk, err.dv));
}

INSTANTIATE_TEST_SUITE_P(Cpu, VariantBackward, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return case_name(info.param); });

// forward() keeps nothing for a backward: a backward after it (no forward_for_backward) is refused
// with a message saying what must come first, not run on stale or missing probabilities.
TEST(VariantBackward, NeedsForwardForBackwardFirst) {
  AttentionSpec spec = spec_of({"naive", DType::fp32, Layout::bhsd, true, CausalAlign::top_left, 4, 17, 17, 32});
  for (const char* name : {"naive", "inplace", "math", "fused", "efficient", "flash"}) {
    Variant* variant = find_variant(name);
    const AttentionInputs in = make_inputs(spec, 1);
    const Tensor dout = make_output_grad(spec, 1);
    Tensor out = make_output(spec);
    AttentionGrads g = make_grads(spec);
    variant->prepare(spec);
    variant->release_saved();
    variant->forward(spec, in.q, in.k, in.v, out);
    try {
      variant->backward(spec, in.q, in.k, in.v, out, dout, g.dq, g.dk, g.dv);
      ADD_FAILURE() << name << ": backward ran without forward_for_backward";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("forward_for_backward()"), std::string::npos) << e.what();
    }
  }
}

// Every CPU variant has a backward on the CPU; cudnn (no CPU forward either) says it has none,
// naming the device. On CUDA the op sequences have one wherever the device is usable (their
// kernels are the backend's) and say why not otherwise; efficient's and flash's backward kernels
// are the CPU's, so a CUDA spec is refused naming the device.
TEST(VariantBackward, Refusals) {
  AttentionSpec spec;
  spec.device = Device::cpu;
  for (const char* name : {"naive", "inplace", "math", "fused", "efficient", "flash"}) {
    EXPECT_FALSE(find_variant(name)->backward_refusal(spec).has_value()) << name;
  }
  const std::optional<std::string> cudnn = find_variant("cudnn")->backward_refusal(spec);
  ASSERT_TRUE(cudnn.has_value());
  EXPECT_NE(cudnn->find("cudnn"), std::string::npos) << *cudnn;
  EXPECT_NE(cudnn->find("device cpu"), std::string::npos) << *cudnn;
  spec.device = Device::cuda;
  const bool gpu_usable = !ops::unavailable_reason(Device::cuda).has_value();
  for (const char* name : {"naive", "inplace", "math", "fused", "efficient", "flash"}) {
    const std::optional<std::string> gpu = find_variant(name)->backward_refusal(spec);
    const bool op_sequence = std::string(name) != "efficient" && std::string(name) != "flash";
    EXPECT_EQ(gpu.has_value(), !(op_sequence && gpu_usable)) << name << ": " << gpu.value_or("no refusal");
    if (gpu) EXPECT_EQ(gpu->rfind("device cuda:", 0), 0u) << *gpu;
  }
}

}  // namespace
}  // namespace attnprof
