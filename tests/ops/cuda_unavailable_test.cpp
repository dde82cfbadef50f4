// The words `devices` and --device cuda use when the CUDA runtime cannot reach a GPU, from the
// runtime's error codes (the values of driver_types.h, CUDA 11-13).
#include "ops/cuda_unavailable.h"

#include <gtest/gtest.h>

namespace attnprof::ops {
namespace {

TEST(CudaUnavailable, ErrorCodesAreTheRuntimes) {
  EXPECT_EQ(kCudaErrorStubLibrary, 34);
  EXPECT_EQ(kCudaErrorInsufficientDriver, 35);
  EXPECT_EQ(kCudaErrorNoDevice, 100);
}

// A machine with the toolkit and no driver: cudaGetDeviceCount says "driver version is
// insufficient", which would send a user to upgrade a driver that is not there.
TEST(CudaUnavailable, NoDriverLibraryIsNoDriverNotAnOldOne) {
  for (int code : {kCudaErrorInsufficientDriver, kCudaErrorStubLibrary, kCudaErrorNoDevice, 999}) {
    std::string why = cuda_unavailable_reason(code, "cudaErrorInsufficientDriver",
                                              "CUDA driver version is insufficient for CUDA runtime version", false);
    EXPECT_EQ(why, "no NVIDIA driver (libcuda.so.1 is not installed)") << code;
  }
}

TEST(CudaUnavailable, WithTheDriverEachCodeSaysWhatIsWrong) {
  EXPECT_EQ(cuda_unavailable_reason(kCudaErrorInsufficientDriver, "cudaErrorInsufficientDriver", "x", true),
            "the NVIDIA driver is older than this build's CUDA runtime needs (cudaErrorInsufficientDriver)");
  EXPECT_EQ(cuda_unavailable_reason(kCudaErrorStubLibrary, "cudaErrorStubLibrary", "x", true),
            "no NVIDIA driver (only the CUDA toolkit's stub libcuda.so was found)");
  EXPECT_EQ(cuda_unavailable_reason(kCudaErrorNoDevice, "cudaErrorNoDevice", "x", true),
            "no NVIDIA GPU is visible to the driver (cudaErrorNoDevice)");
  EXPECT_EQ(cuda_unavailable_reason(46, "cudaErrorDevicesUnavailable", "CUDA-capable device(s) is/are busy or unavailable", true),
            "CUDA-capable device(s) is/are busy or unavailable (cudaErrorDevicesUnavailable)");
}

TEST(CudaUnavailable, NoBuildClaimWithoutCause) {
  // Only a build configured without CUDA says so; the driver reasons never mention the build.
  for (int code : {kCudaErrorInsufficientDriver, kCudaErrorStubLibrary, kCudaErrorNoDevice}) {
    for (bool loads : {false, true}) EXPECT_EQ(cuda_unavailable_reason(code, "n", "t", loads).find("build has no"), std::string::npos);
  }
  EXPECT_NE(std::string(kNoCudaInThisBuild).find("configured without"), std::string::npos);
}

}  // namespace
}  // namespace attnprof::ops
