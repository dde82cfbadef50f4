// The ops layer: PyTorch's semantics for the pieces the variants compose.
#include <attnprof/error.h>
#include <attnprof/memory.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops/ops.h"

namespace attnprof::ops {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor filled(std::vector<std::int64_t> shape, float value) {
  Tensor t = Tensor::empty(std::move(shape), DType::fp32);
  for (std::int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = value + static_cast<float>(i);
  return t;
}

TEST(Ops, BroadcastToUsesStrideZero) {
  const Tensor mask = ones_bool(3, 5, Device::cpu);
  const Tensor wide = broadcast_to(mask, {2, 4, 3, 5});
  EXPECT_EQ(wide.strides(), (std::vector<std::int64_t>{0, 0, 5, 1}));
  EXPECT_THROW(broadcast_to(mask, {2, 4, 3, 6}), Error);
}

TEST(Ops, MaskedFillOutOfPlaceLeavesTheSourceAndInPlaceChangesIt) {
  Tensor scores = filled({1, 1, 2, 3}, 1.0f);
  const Tensor mask = triu(ones_bool(2, 3, Device::cpu), 1);
  const Tensor out = masked_fill(scores, mask, -kInf);
  EXPECT_EQ(scores.data<float>()[1], 2.0f);  // untouched
  EXPECT_EQ(out.data<float>()[1], -INFINITY);
  EXPECT_EQ(out.data<float>()[0], 1.0f);
  EXPECT_EQ(out.data<float>()[4], 5.0f);  // row 1, col 1: on the diagonal, kept
  EXPECT_EQ(out.data<float>()[5], -INFINITY);
  masked_fill_(scores, mask, -kInf);
  EXPECT_EQ(scores.data<float>()[1], -INFINITY);
}

TEST(Ops, SafeSoftmaxZeroesFullyMaskedRowsWhereSoftmaxGivesNaN) {
  Tensor scores = filled({1, 1, 2, 4}, 0.0f);
  for (int j = 0; j < 4; ++j) scores.data<float>()[j] = -INFINITY;  // row 0: every key masked
  const Tensor plain = softmax(scores);
  const Tensor safe = safe_softmax(scores);
  for (int j = 0; j < 4; ++j) {
    EXPECT_TRUE(std::isnan(plain.data<float>()[j]));
    EXPECT_EQ(safe.data<float>()[j], 0.0f);
  }
  double sum = 0;
  for (int j = 4; j < 8; ++j) sum += safe.data<float>()[j];
  EXPECT_NEAR(sum, 1.0, 1e-6);
  EXPECT_EQ(safe.data<float>()[4], plain.data<float>()[4]);
}

TEST(Ops, MatmulHonoursGqaAndWritesIntoStridedOut) {
  const Tensor a = filled({1, 4, 2, 3}, 0.0f);
  Tensor b = Tensor::empty({1, 2, 3, 2}, DType::fp32);  // 2 kv heads for 4 heads
  for (std::int64_t i = 0; i < b.numel(); ++i) b.data<float>()[i] = i % 2 == 0 ? 1.0f : static_cast<float>(i / 6);
  Tensor out = Tensor::empty_strided({1, 4, 2, 2}, {16, 2, 8, 1}, DType::fp32);
  matmul_out(out, a, b, false);
  // head 3 uses kv head 1: column 0 sums the row of a, column 1 sums it times 1
  const float* row = a.data<float>() + (3 * 2 + 1) * 3;
  const float sum = row[0] + row[1] + row[2];
  EXPECT_EQ(out.data<float>()[1 * 8 + 3 * 2 + 0], sum);
  EXPECT_EQ(out.data<float>()[1 * 8 + 3 * 2 + 1], sum);
  Tensor wrong = Tensor::empty({1, 4, 2, 3}, DType::fp32);
  EXPECT_THROW(matmul_out(wrong, a, b, false), Error);
}

TEST(Ops, ToAndZerosLike) {
  const Tensor x = filled({2, 3}, 0.1f);
  const Tensor y = to(x, DType::bf16);
  EXPECT_EQ(y.dtype(), DType::bf16);
  EXPECT_EQ(bf16_to_float(y.data<bf16>()[4]), bf16_to_float(float_to_bf16(4.1f)));
  const Tensor z = zeros_like(x, DType::fp32);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(z.data<float>()[i], 0.0f);
}

TEST(Ops, IntermediatesAreFreedAfterUse) {
  const std::int64_t before = memory::stats(Device::cpu).current_bytes;
  {
    const Tensor scores = filled({1, 2, 64, 64}, 0.0f);
    const Tensor p = softmax(mul(scores, 0.5));
  }
  EXPECT_EQ(memory::stats(Device::cpu).current_bytes, before);
}

}  // namespace
}  // namespace attnprof::ops
