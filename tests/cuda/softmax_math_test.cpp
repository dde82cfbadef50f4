// softmax_math.h's host path (what the device computes too; hopper_test.cpp compares the two on a
// GPU): soft_exp2 against fp64 exp2 and at values worked out by hand, pack_bf16x2_rn against the
// round-to-nearest conversion of attnprof/dtype.h and at hand-worked bit patterns.
#include <attnprof/dtype.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "cuda/hopper/softmax_math.h"
#include "cuda/softmax_math_inputs.h"

using namespace attnprof;
using attnprof::cuda::hopper::pack_bf16x2_rn;
using attnprof::cuda::hopper::soft_exp2;

TEST(SoftExp2, WithinTheCubicsErrorOfFp64Exp2) {
  double worst = 0.0;
  for (const float x : cuda::testing::softmax_math_inputs()) {
    if (std::isnan(x) || x < -126.0f) continue;
    const double want = std::exp2(static_cast<double>(x));
    worst = std::max(worst, std::abs(static_cast<double>(soft_exp2(x)) - want) / want);
  }
  EXPECT_LT(worst, 9e-5);  // the cubic's fitted bound is 8.6e-5; bf16 rounds P to 2^-9 = 2.0e-3
  EXPECT_GT(worst, 1e-6);  // it is an approximation: exact agreement would mean MUFU or libm
}

TEST(SoftExp2, KnownValues) {
  for (int k = -126; k <= 10; ++k) EXPECT_EQ(soft_exp2(static_cast<float>(k)), std::ldexp(1.0f, k)) << k;  // f = 0: exact
  EXPECT_EQ(soft_exp2(-0.0f), 1.0f);
  EXPECT_EQ(soft_exp2(-127.0f), 0.0f);  // 2^-127 is below the clamp
  EXPECT_EQ(soft_exp2(-1000.0f), 0.0f);
  EXPECT_EQ(soft_exp2(-std::numeric_limits<float>::infinity()), 0.0f);  // a masked score
  EXPECT_TRUE(std::isnan(soft_exp2(std::numeric_limits<float>::quiet_NaN())));
  // 2^-0.5 = 0.70710678: the cubic at f = 0.5 gives 1 + 0.5·(0.69512 + 0.5·(0.22765 + 0.5·0.07706))
  // = 1.41420 (2^0.5 = 1.41421), times 2^-1.
  EXPECT_NEAR(soft_exp2(-0.5f), 0.70710678, 0.70710678 * 9e-5);
}

TEST(PackBf16x2, MatchesRoundToNearestAwayFromTies) {
  const std::vector<float> in = cuda::testing::softmax_math_inputs();
  int compared = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const float lo = in[i], hi = in[in.size() - 1 - i];
    if (std::isnan(lo) || std::isnan(hi)) continue;
    const std::uint32_t got = pack_bf16x2_rn(lo, hi);
    EXPECT_EQ(got & 0xFFFFu, float_to_bf16(lo).bits) << lo;
    EXPECT_EQ(got >> 16, float_to_bf16(hi).bits) << hi;
    ++compared;
  }
  EXPECT_GT(compared, 1000);
}

TEST(PackBf16x2, HandWorkedBits) {
  EXPECT_EQ(pack_bf16x2_rn(1.0f, 2.0f), 0x40003F80u);
  EXPECT_EQ(pack_bf16x2_rn(0.0f, -1.5f), 0xBFC00000u);
  // 1 + 2^-8 lies halfway between bf16 1.0 (0x3F80) and 1.0078125 (0x3F81): away from zero gives
  // 0x3F81 where ties-to-even gives 0x3F80; just below the tie both give 0x3F80.
  EXPECT_EQ(pack_bf16x2_rn(1.00390625f, std::nextafter(1.00390625f, 0.0f)), 0x3F803F81u);
  EXPECT_EQ(float_to_bf16(1.00390625f).bits, 0x3F80u);
  // 0.99999994 (the largest float below 1) rounds up to 1.0.
  EXPECT_EQ(pack_bf16x2_rn(std::nextafter(1.0f, 0.0f), 0.0f), 0x00003F80u);
}
