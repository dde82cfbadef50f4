// Issue 8, item 5: numerics edge cases.
// - large-magnitude bf16 inputs (|x| ~ 1e4, so scores ~ 1e8) do not overflow any variant's softmax;
// - inputs holding ±inf or NaN are found before running (find_nonfinite names the first);
// - fully masked rows: naive/inplace give NaN (softmax of all −inf), the math decomposition gives 0.
//   With top-left causal masking every row sees key 0, so such rows only come from an explicit mask:
//   here the variants' own op sequences are run with a mask that hides every key of some rows.
#include <attnprof/attention.h>
#include <attnprof/variant.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops/ops.h"
#include "variants/reference.h"

namespace attnprof {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

AttentionSpec small_spec(DType dtype) {
  AttentionSpec spec;
  spec.batch = 1;
  spec.heads = 4;
  spec.kv_heads = 2;
  spec.seq_q = spec.seq_k = 150;
  spec.head_dim = 64;
  spec.dtype = dtype;
  spec.causal = true;
  return spec;
}

// Multiplies every element of a bf16 tensor by `factor` (rounding back to bf16).
void scale_bf16(Tensor& t, float factor) {
  bf16* p = t.data<bf16>();
  for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = float_to_bf16(bf16_to_float(p[i]) * factor);
}

class LargeMagnitude : public ::testing::TestWithParam<std::string> {};

TEST_P(LargeMagnitude, Bf16InputsAround1e4StayFiniteAndAccurate) {
  const AttentionSpec spec = small_spec(DType::bf16);
  AttentionInputs in = make_inputs(spec, 5);
  scale_bf16(in.q, 1e4f);
  scale_bf16(in.k, 1e4f);
  scale_bf16(in.v, 1e4f);
  ASSERT_FALSE(variants::find_nonfinite(in.q).has_value());
  Variant* variant = find_variant(GetParam());
  Tensor out = make_output(spec);
  variants::poison_nan(out);
  variant->prepare(spec);
  variant->forward(spec, in.q, in.k, in.v, out);
  EXPECT_FALSE(variants::find_nonfinite(out).has_value()) << *variants::find_nonfinite(out);
  const variants::ErrorReport report = variants::check_against_reference(spec, in.q, in.k, in.v, out);
  EXPECT_EQ(report.nan_count, 0);
  RecordProperty("rel_err", std::to_string(report.rel_err));
  // naive, inplace and fused store the scores in bf16, as PyTorch does: at |s| ~ 1e8 that rounding
  // (±2e5) exceeds the gap between a row's top scores and can pick another key (measured rel_err
  // 0.08 here). Variants that keep fp32 scores must stay accurate.
  if (GetParam() == "math" || GetParam() == "efficient" || GetParam() == "flash") {
    EXPECT_LE(report.rel_err, 1e-2);
  }
}

INSTANTIATE_TEST_SUITE_P(Cpu, LargeMagnitude,
                         ::testing::Values("naive", "inplace", "math", "fused", "efficient", "flash"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(NonFinite, FoundWithItsIndex) {
  const AttentionSpec spec = small_spec(DType::bf16);
  AttentionInputs in = make_inputs(spec, 6);
  EXPECT_FALSE(variants::find_nonfinite(in.k).has_value());
  in.k.data<bf16>()[5] = float_to_bf16(std::numeric_limits<float>::quiet_NaN());
  const auto message = variants::find_nonfinite(in.k);
  ASSERT_TRUE(message.has_value());
  EXPECT_NE(message->find("nan at [0, 0, 0, 5]"), std::string::npos) << *message;
  in.k.data<bf16>()[7] = float_to_bf16(-std::numeric_limits<float>::infinity());
  EXPECT_NE(variants::find_nonfinite(in.k)->find("2 non-finite values"), std::string::npos);
}

TEST(NonFinite, InfInFp32) {
  Tensor t = Tensor::empty({2, 3}, DType::fp32);
  for (int i = 0; i < 6; ++i) t.data<float>()[i] = 1.0f;
  t.data<float>()[4] = std::numeric_limits<float>::infinity();
  EXPECT_NE(variants::find_nonfinite(t)->find("inf at [1, 1]"), std::string::npos);
}

// Rows 0 and 3 of the [Sq, Sk] mask hide every key.
Tensor mask_hiding_rows_0_and_3(std::int64_t sq, std::int64_t sk) {
  Tensor mask = ops::triu(ops::ones_bool(sq, sk, Device::cpu), 1);
  for (std::int64_t j = 0; j < sk; ++j) {
    mask.data<std::uint8_t>()[0 * sk + j] = 1;
    mask.data<std::uint8_t>()[3 * sk + j] = 1;
  }
  return mask;
}

TEST(FullyMaskedRows, NaiveGivesNaNMathGivesZero) {
  AttentionSpec spec = small_spec(DType::bf16);
  const AttentionInputs in = make_inputs(spec, 8);
  const Tensor hidden = mask_hiding_rows_0_and_3(spec.seq_q, spec.seq_k);

  // naive's sequence with this mask
  Tensor scores = ops::mul(ops::matmul(in.q, in.k, true), spec.softmax_scale());
  scores = ops::masked_fill(scores, ops::broadcast_to(hidden, scores.shape()), -kInf);
  Tensor naive_out = make_output(spec);
  ops::matmul_out(naive_out, ops::softmax(scores), in.v, false);

  // math's sequence: additive mask from the kept positions, safe softmax
  const Tensor keep = ops::logical_not(hidden);
  Tensor additive = ops::zeros_like(keep, DType::fp32);
  ops::masked_fill_(additive, ops::logical_not(keep), -kInf);
  const double s = std::sqrt(spec.softmax_scale());
  Tensor fp32_scores = ops::matmul(ops::mul(ops::to(in.q, DType::fp32), s), ops::mul(ops::to(in.k, DType::fp32), s),
                                   true, false);
  ops::add_(fp32_scores, additive);
  Tensor math_result = ops::matmul(ops::safe_softmax(fp32_scores), ops::to(in.v, DType::fp32), false, false);

  for (std::int64_t h = 0; h < spec.heads; ++h) {
    for (std::int64_t i : {0, 1, 3, 4}) {
      for (std::int64_t d = 0; d < spec.head_dim; ++d) {
        const std::int64_t idx = (h * spec.seq_q + i) * spec.head_dim + d;
        const float naive = bf16_to_float(naive_out.data<bf16>()[idx]);
        const float math = math_result.data<float>()[idx];
        if (i == 0 || i == 3) {
          ASSERT_TRUE(std::isnan(naive)) << "naive, fully masked row " << i;
          ASSERT_EQ(math, 0.0f) << "math, fully masked row " << i;
        } else {
          ASSERT_FALSE(std::isnan(naive));
          ASSERT_NEAR(naive, math, 2e-2 * (1 + std::abs(math)));
        }
      }
    }
  }
}

}  // namespace
}  // namespace attnprof
