#include <gtest/gtest.h>

#include "cuda/tensor_layout.h"

using namespace attnprof;
using attnprof::cuda::copyable_as_bytes;
using attnprof::cuda::is_dense;

TEST(TensorLayout, BshdViewsAreDenseAndCopyableAsBytes) {
  Tensor bhsd = Tensor::empty({2, 3, 5, 8}, DType::bf16);
  Tensor bshd = Tensor::empty_strided({2, 3, 5, 8}, {5 * 3 * 8, 8, 3 * 8, 1}, DType::bf16);
  Tensor bshd2 = Tensor::empty_strided({2, 3, 5, 8}, {5 * 3 * 8, 8, 3 * 8, 1}, DType::bf16);
  EXPECT_TRUE(is_dense(bhsd));
  EXPECT_TRUE(is_dense(bshd));
  EXPECT_TRUE(copyable_as_bytes(bshd2, bshd));
  EXPECT_FALSE(copyable_as_bytes(bhsd, bshd));  // same elements, different order: needs a kernel
}

TEST(TensorLayout, GapsAndBroadcastsAreNotDense) {
  Tensor big = Tensor::empty({4, 16}, DType::fp32);
  EXPECT_FALSE(is_dense(big.view_strided({4, 8}, {16, 1})));   // every other half-row
  EXPECT_FALSE(is_dense(big.view_strided({4, 16}, {0, 1})));   // stride-0 broadcast
  EXPECT_TRUE(is_dense(big.view_strided({1, 16}, {999, 1})));  // a size-1 dim's stride does not matter
}
