#include "ops/cuda_unavailable.h"

#include <dlfcn.h>
#include <fmt/format.h>

namespace attnprof::ops {

std::string cuda_unavailable_reason(int cuda_error, const std::string& error_name, const std::string& error_text,
                                    bool driver_library_loads) {
  if (!driver_library_loads) return "no NVIDIA driver (libcuda.so.1 is not installed)";
  switch (cuda_error) {
    case kCudaErrorStubLibrary: return "no NVIDIA driver (only the CUDA toolkit's stub libcuda.so was found)";
    case kCudaErrorInsufficientDriver:
      return fmt::format("the NVIDIA driver is older than this build's CUDA runtime needs ({})", error_name);
    case kCudaErrorNoDevice: return fmt::format("no NVIDIA GPU is visible to the driver ({})", error_name);
    default: return fmt::format("{} ({})", error_text, error_name);
  }
}

bool nvidia_driver_library_loads() {
  void* handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) return false;
  dlclose(handle);
  return true;
}

}  // namespace attnprof::ops
