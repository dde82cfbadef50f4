#include <gtest/gtest.h>

#include "variants/cudnn.h"

using namespace attnprof;

// In a CUDA build the cudnn variant is real; off the GPU it refuses with the flag and what is allowed.
TEST(CudnnVariant, RefusesOtherDevicesAndDtypesInOneLine) {
  auto variant = variants::make_cudnn_variant();
  AttentionSpec spec;
  spec.device = Device::cpu;
  auto why = variant->refusal(spec);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->rfind("runs on device cuda only", 0), 0u) << *why;  // the runner prefixes "variant cudnn: "
  spec.device = Device::cuda;
  spec.dtype = DType::fp32;
  why = variant->refusal(spec);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->rfind("dtype fp32:", 0), 0u) << *why;
  spec.dtype = DType::bf16;
  spec.head_dim = 100;
  why = variant->refusal(spec);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->rfind("head_dim 100:", 0), 0u) << *why;
  EXPECT_EQ(why->find('\n'), std::string::npos);
}
