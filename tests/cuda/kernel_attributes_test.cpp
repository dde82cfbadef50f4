// configure_kernel_once (src/cuda/kernel_attributes.h): the attributes a kernel needs are set on
// that kernel, once per (device, kernel), and a second kernel gets its own.
#include "cuda/kernel_attributes.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "cuda/gpu_test_util.h"
#include "cuda/kernel_attributes_probe.h"

namespace attnprof::cuda {
namespace {

using attributes_testing::launch_probe;
using attributes_testing::probe_kernel;

cudaFuncAttributes attributes_of(const void* kernel) {
  cudaFuncAttributes a{};
  EXPECT_EQ(cudaFuncGetAttributes(&a, kernel), cudaSuccess);
  return a;
}

TEST(ConfigureKernelOnce, SetsEachKernelsOwnAttributesOnce) {
  ATTNPROF_REQUIRE_GPU();
  constexpr int kBig = 100 * 1024;  // past the 48 KiB a kernel may take without raising its limit
  int* out = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&out), sizeof(int)), cudaSuccess);
  // Unconfigured, the kernel may not take that much (launching it anyway would be refused, an API
  // error compute-sanitizer reports).
  EXPECT_LT(attributes_of(probe_kernel(0)).maxDynamicSharedSizeBytes, kBig);

  configure_kernel_once(probe_kernel(0), kBig);
  EXPECT_EQ(attributes_of(probe_kernel(0)).maxDynamicSharedSizeBytes, kBig);
  ASSERT_EQ(launch_probe(0, kBig, out), cudaSuccess);
  int host = 0;
  ASSERT_EQ(cudaMemcpy(&host, out, sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(host, 7);

  // Once: a second call for the same kernel on the same device sets nothing (the limit lowered behind
  // its back stays lowered).
  ASSERT_EQ(cudaFuncSetAttribute(probe_kernel(0), cudaFuncAttributeMaxDynamicSharedMemorySize, 1024), cudaSuccess);
  configure_kernel_once(probe_kernel(0), kBig);
  EXPECT_EQ(attributes_of(probe_kernel(0)).maxDynamicSharedSizeBytes, 1024);
  ASSERT_EQ(cudaFuncSetAttribute(probe_kernel(0), cudaFuncAttributeMaxDynamicSharedMemorySize, kBig), cudaSuccess);

  // Another kernel (the other instantiation) is configured on its own, here with the carveout.
  EXPECT_NE(attributes_of(probe_kernel(1)).maxDynamicSharedSizeBytes, 64 * 1024);
  configure_kernel_once(probe_kernel(1), 64 * 1024, Carveout::max_shared);
  const cudaFuncAttributes second = attributes_of(probe_kernel(1));
  EXPECT_EQ(second.maxDynamicSharedSizeBytes, 64 * 1024);
  EXPECT_EQ(second.preferredShmemCarveout, static_cast<int>(cudaSharedmemCarveoutMaxShared));
  ASSERT_EQ(launch_probe(1, 64 * 1024, out), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(&host, out, sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(host, 8);
  EXPECT_EQ(cudaFree(out), cudaSuccess);
}

}  // namespace
}  // namespace attnprof::cuda
