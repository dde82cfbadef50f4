#pragma once
// Why the CUDA device cannot be used, in words a user can act on. Plain C++ (no CUDA headers), so
// the mapping is the same in every build and unit-tested where there is no GPU.
#include <string>

namespace attnprof::ops {

// The CUDA runtime's error codes this mapping names (driver_types.h; stable across CUDA 11-13).
inline constexpr int kCudaErrorStubLibrary = 34;
inline constexpr int kCudaErrorInsufficientDriver = 35;
inline constexpr int kCudaErrorNoDevice = 100;

// What cudaGetDeviceCount returned and whether the NVIDIA driver's library loads. The runtime
// reports a missing driver as "driver version is insufficient" (cudaErrorInsufficientDriver):
// without the driver library that is "no NVIDIA driver", never a version problem.
std::string cuda_unavailable_reason(int cuda_error, const std::string& error_name, const std::string& error_text,
                                    bool driver_library_loads);

// Whether libcuda.so.1 (the NVIDIA driver's user-space library) can be loaded in this process.
bool nvidia_driver_library_loads();

// The reason in a build configured without CUDA.
inline constexpr const char* kNoCudaInThisBuild = "this build has no CUDA backend (configured without the CUDA toolkit)";

}  // namespace attnprof::ops
