#include <attnprof/dtype.h>
#include <attnprof/error.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace attnprof;

TEST(Bf16, RoundsToNearestEven) {
  // 1 + 2^-8 is exactly halfway between bf16 1.0 and 1.0078125: ties go to the even mantissa (1.0).
  EXPECT_EQ(float_to_bf16(1.0f + 0.00390625f).bits, 0x3f80);
  // 1.0078125 + 2^-8 is halfway between 1.0078125 (odd) and 1.015625 (even): rounds up.
  EXPECT_EQ(float_to_bf16(1.0078125f + 0.00390625f).bits, 0x3f82);
  // Just above halfway rounds up.
  EXPECT_EQ(float_to_bf16(1.0f + 0.0040f).bits, 0x3f81);
  EXPECT_EQ(bf16_to_float(bf16{0x4049}), 3.140625f);
}

TEST(Bf16, SpecialValues) {
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::infinity()).bits, 0x7f80);
  EXPECT_EQ(float_to_bf16(-std::numeric_limits<float>::infinity()).bits, 0xff80);
  // The largest float rounds to infinity in bf16.
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()).bits, 0x7f80);
}

TEST(Fp16, KnownValues) {
  EXPECT_EQ(float_to_fp16(1.0f).bits, 0x3c00);
  EXPECT_EQ(float_to_fp16(-2.0f).bits, 0xc000);
  EXPECT_EQ(float_to_fp16(65504.0f).bits, 0x7bff);
  EXPECT_EQ(float_to_fp16(65520.0f).bits, 0x7c00);  // rounds to infinity
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -24)).bits, 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -25)).bits, 0x0000);  // tie to even: zero
  EXPECT_EQ(float_to_fp16(std::ldexp(3.0f, -25)).bits, 0x0002);  // 1.5 ulp: tie to even 2
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: even is 1.
  EXPECT_EQ(float_to_fp16(1.0f + std::ldexp(1.0f, -11)).bits, 0x3c00);
  EXPECT_EQ(float_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)).bits, 0x3c02);
}

TEST(Fp16, RoundTripsEveryFiniteValue) {
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
    fp16 h{static_cast<std::uint16_t>(bits)};
    float f = fp16_to_float(h);
    if (std::isnan(f)) continue;
    EXPECT_EQ(float_to_fp16(f).bits, h.bits) << bits;
  }
  EXPECT_EQ(fp16_to_float(fp16{0x0001}), std::ldexp(1.0f, -24));
  EXPECT_EQ(fp16_to_float(fp16{0x3555}), 0.333251953125f);
}

TEST(DType, ParseNamesAllowedValuesOnError) {
  EXPECT_EQ(parse_dtype("bfloat16"), DType::bf16);
  EXPECT_EQ(parse_dtype("fp16"), DType::fp16);
  try {
    parse_dtype("fp8");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("bf16, fp16, fp32"), std::string::npos);
  }
}
