#include <attnprof/memory.h>
#include <attnprof/tensor.h>
#include <gtest/gtest.h>

using namespace attnprof;

TEST(Memory, CurrentAndPeakFollowAllocations) {
  memory::Stats before = memory::stats(Device::cpu);
  memory::reset_peak(Device::cpu);
  {
    Tensor a = Tensor::empty({1000}, DType::fp32);
    {
      Tensor b = Tensor::empty({500}, DType::fp64);
      EXPECT_EQ(memory::stats(Device::cpu).current_bytes, before.current_bytes + 4000 + 4000);
    }
    EXPECT_EQ(memory::stats(Device::cpu).current_bytes, before.current_bytes + 4000);
  }
  memory::Stats after = memory::stats(Device::cpu);
  EXPECT_EQ(after.current_bytes, before.current_bytes);
  EXPECT_EQ(after.peak_bytes, before.current_bytes + 8000);
  EXPECT_EQ(after.allocations, before.allocations + 2);
}

TEST(Memory, ViewsDoNotAllocate) {
  Tensor a = Tensor::empty({64, 64}, DType::bf16);
  memory::Stats before = memory::stats(Device::cpu);
  Tensor v = a.view_strided({64, 64}, {1, 64});
  EXPECT_EQ(memory::stats(Device::cpu).allocations, before.allocations);
}
