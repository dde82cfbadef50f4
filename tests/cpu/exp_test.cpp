// The exp2 polynomial behind every softmax: accuracy against std::exp in double, and the special
// values the online softmax relies on (−inf → 0, far below range → 0, NaN stays NaN).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "cpu/cpu_features.h"
#include "cpu/row_kernels.h"

namespace attnprof::cpu {
namespace {

class ExpTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (static_cast<int>(detected_isa()) < static_cast<int>(GetParam())) GTEST_SKIP() << "CPU lacks this ISA";
  }
  double max_rel_err(double lo, double hi, int n) {
    std::vector<float> x(static_cast<std::size_t>(n)), y(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = static_cast<float>(lo + (hi - lo) * i / (n - 1));
    exp_row(y.data(), x.data(), n, GetParam());
    double worst = 0;
    for (int i = 0; i < n; ++i) {
      const double want = std::exp(static_cast<double>(x[static_cast<std::size_t>(i)]));
      worst = std::max(worst, std::abs(y[static_cast<std::size_t>(i)] - want) / want);
    }
    return worst;
  }
};

TEST_P(ExpTest, SoftmaxRangeIsWithinAFewUlp) {
  // softmax arguments are x − max ≤ 0; the error is the polynomial's (~1.2e-7) plus rounding x·log2 e.
  EXPECT_LE(max_rel_err(-10.0, 10.0, 200001), 1e-6);
}

TEST_P(ExpTest, FullFloatRange) {
  // |x|·log2 e rounded to fp32 costs up to ½ ulp(127)·ln 2 ≈ 2.6e-6 relative at the ends.
  EXPECT_LE(max_rel_err(-87.0, 88.0, 200001), 5e-6);
}

TEST_P(ExpTest, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x{-inf, -200.0f, -104.0f, 0.0f, 89.0f, inf, std::numeric_limits<float>::quiet_NaN()};
  // pad to more than one vector so the tail path and the full-width path both see them
  x.resize(40, 1.0f);
  std::vector<float> y(x.size());
  exp_row(y.data(), x.data(), static_cast<std::int64_t>(x.size()), GetParam());
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_GE(y[2], 0.0f);
  EXPECT_LT(y[2], 1e-44f);
  EXPECT_EQ(y[3], 1.0f);
  EXPECT_EQ(y[4], inf);
  EXPECT_EQ(y[5], inf);
  EXPECT_TRUE(std::isnan(y[6]));
  EXPECT_NEAR(y[39], std::exp(1.0), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Cpu, ExpTest, ::testing::Values(Isa::portable, Isa::avx512),
                         [](const ::testing::TestParamInfo<Isa>& info) { return isa_name(info.param); });

}  // namespace
}  // namespace attnprof::cpu
