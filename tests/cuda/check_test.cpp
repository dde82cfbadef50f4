#include <attnprof/error.h>
#include <gtest/gtest.h>

#include <string>

#include "cuda/check.h"
#include "cuda/cuda_backend.h"

using namespace attnprof;

TEST(CudaCheck, MessageNamesCallFileLineAndCudaString) {
  try {
    ATTNPROF_CUDA_CHECK(cudaErrorInvalidValue);
    FAIL() << "no throw";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("cudaErrorInvalidValue failed at"), std::string::npos) << what;
    EXPECT_NE(what.find("check_test.cpp:"), std::string::npos) << what;
    EXPECT_NE(what.find("invalid argument"), std::string::npos) << what;
  }
}

TEST(CudaCheck, CublasStatusIsNamed) {
  try {
    ATTNPROF_CUBLAS_CHECK(CUBLAS_STATUS_NOT_SUPPORTED);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CUBLAS_STATUS_NOT_SUPPORTED"), std::string::npos) << e.what();
  }
}

// Without a GPU or driver (CI), asking for the backend is a usage error naming --device cuda.
TEST(CudaBackend, NoDeviceIsAClearUsageError) {
  auto reason = cuda::device_unavailable_reason();
  if (!reason) GTEST_SKIP() << "a CUDA device is present here; this checks the message without one";
  try {
    cuda::cuda_backend();
    FAIL() << "no throw";
  } catch (const UsageError& e) {
    std::string what = e.what();
    EXPECT_EQ(what.rfind("device cuda: no usable GPU:", 0), 0u) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos);
  }
}
