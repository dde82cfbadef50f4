#include <attnprof/memory.h>
#include <attnprof/tensor.h>
#include <gtest/gtest.h>

#include <cmath>

using namespace attnprof;

TEST(Tensor, ContiguousStrides) {
  Tensor t = Tensor::empty({2, 3, 4, 5}, DType::fp32);
  EXPECT_EQ(t.strides(), (std::vector<std::int64_t>{60, 20, 5, 1}));
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.numel(), 120);
  EXPECT_EQ(t.storage_bytes(), 480u);
  EXPECT_EQ(t.describe(), "fp32[2, 3, 4, 5]");
}

TEST(Tensor, ViewSharesStorage) {
  Tensor t = Tensor::empty({4, 4}, DType::fp32);
  for (int i = 0; i < 16; ++i) t.data<float>()[i] = static_cast<float>(i);
  Tensor transposed = t.view_strided({4, 4}, {1, 4});
  EXPECT_FALSE(transposed.is_contiguous());
  EXPECT_EQ(transposed.data<float>()[1 * 4 + 0], 4.0f);  // raw memory is shared
  Tensor row2 = t.view_strided({4}, {1}, 8);
  EXPECT_EQ(row2.data<float>()[0], 8.0f);
}

TEST(Tensor, FillNormalIsSeededAndStandard) {
  Tensor a = Tensor::empty({1 << 16}, DType::fp32);
  Tensor b = Tensor::empty({1 << 16}, DType::fp32);
  fill_normal(a, 7);
  fill_normal(b, 7);
  double sum = 0, sum_sq = 0;
  for (int i = 0; i < (1 << 16); ++i) {
    ASSERT_EQ(a.data<float>()[i], b.data<float>()[i]);
    sum += a.data<float>()[i];
    sum_sq += a.data<float>()[i] * a.data<float>()[i];
  }
  double mean = sum / (1 << 16);
  double var = sum_sq / (1 << 16) - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.02);
  EXPECT_NEAR(var, 1.0, 0.03);
}

TEST(Tensor, FillNormalRoundsToBf16) {
  Tensor a = Tensor::empty({64}, DType::fp32);
  Tensor b = Tensor::empty({64}, DType::bf16);
  fill_normal(a, 3);
  fill_normal(b, 3);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(b.data<bf16>()[i].bits, float_to_bf16(a.data<float>()[i]).bits);
}
