#pragma once
// Every vendor call is checked. A failure throws attnprof::Error naming the call, the file and
// line, and the vendor's own error string, e.g.
//   "cudaMallocAsync(&ptr, bytes, stream) failed at src/cuda/device_memory.cpp:31: out of memory (cudaErrorMemoryAllocation)".
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <cupti.h>

#include <string>

namespace attnprof::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_cudnn_error(cudnnStatus_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_cupti_error(CUptiResult status, const char* call, const char* file, int line);
[[noreturn]] void throw_driver_error(int status, const char* call, const char* file, int line);

// The message text alone (tests check its form).
std::string format_vendor_error(const char* call, const char* file, int line, const std::string& reason);

}  // namespace attnprof::cuda

#define ATTNPROF_CUDA_CHECK(call)                                                                  \
  do {                                                                                             \
    cudaError_t attnprof_status_ = (call);                                                         \
    if (attnprof_status_ != cudaSuccess)                                                           \
      ::attnprof::cuda::throw_cuda_error(attnprof_status_, #call, __FILE__, __LINE__);             \
  } while (0)

// After a kernel launch: the launch configuration error, if any (not a sync).
#define ATTNPROF_CUDA_CHECK_LAUNCH(kernel_name) ATTNPROF_CUDA_CHECK(cudaGetLastError())

#define ATTNPROF_CUBLAS_CHECK(call)                                                                \
  do {                                                                                             \
    cublasStatus_t attnprof_status_ = (call);                                                      \
    if (attnprof_status_ != CUBLAS_STATUS_SUCCESS)                                                 \
      ::attnprof::cuda::throw_cublas_error(attnprof_status_, #call, __FILE__, __LINE__);           \
  } while (0)

#define ATTNPROF_CUDNN_CHECK(call)                                                                 \
  do {                                                                                             \
    cudnnStatus_t attnprof_status_ = (call);                                                       \
    if (attnprof_status_ != CUDNN_STATUS_SUCCESS)                                                  \
      ::attnprof::cuda::throw_cudnn_error(attnprof_status_, #call, __FILE__, __LINE__);            \
  } while (0)

#define ATTNPROF_CUPTI_CHECK(call)                                                                 \
  do {                                                                                             \
    CUptiResult attnprof_status_ = (call);                                                         \
    if (attnprof_status_ != CUPTI_SUCCESS)                                                         \
      ::attnprof::cuda::throw_cupti_error(attnprof_status_, #call, __FILE__, __LINE__);            \
  } while (0)
