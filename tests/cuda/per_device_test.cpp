// PerDevice: a value worked out once per CUDA device. Runs with or without a GPU: without one (CI)
// cudaGetDevice fails and nothing may be kept under a device it could not name.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "cuda/per_device.h"

namespace attnprof::cuda {
namespace {

TEST(PerDevice, KeepsTheFirstAnswerPerDeviceAndAsksAgainWithoutOne) {
  PerDevice<int> kept;
  int calls = 0;
  auto make = [&](int device) {
    ++calls;
    return device * 10 + calls;
  };
  const int first = kept.get(make);
  const int second = kept.get(make);
  int device = -1;
  if (cudaGetDevice(&device) == cudaSuccess) {
    EXPECT_EQ(calls, 1) << "the second call must reuse the kept value";
    EXPECT_EQ(first, device * 10 + 1);
    EXPECT_EQ(second, first);
  } else {
    (void)cudaGetLastError();  // the failed query's sticky error is not this test's business
    EXPECT_EQ(calls, 2) << "without a device nothing is kept";
    EXPECT_EQ(first, -10 + 1);
    EXPECT_EQ(second, -10 + 2);
  }
}

}  // namespace
}  // namespace attnprof::cuda
