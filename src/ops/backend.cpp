#include "ops/backend.h"

#include <attnprof/error.h>

#include <array>
#include <mutex>

#include "cpu/cpu_backend.h"
#include "ops/cuda_unavailable.h"
#ifdef ATTNPROF_HAVE_CUDA
#include "cuda/cuda_backend.h"
#include "cuda/cupti_collector.h"
#include "profiler/device_activity.h"
#endif

namespace attnprof::ops {
namespace {
std::array<Backend*, 2>& installed() {
  static std::array<Backend*, 2> all{nullptr, nullptr};
  return all;
}
std::mutex& install_mutex() {
  static std::mutex m;
  return m;
}
#ifdef ATTNPROF_HAVE_CUDA
// A CUDA build always offers the CUPTI collector to the profiler; creating one creates the backend
// (and says clearly when there is no GPU). backend.o is in every program that runs ops.
const bool g_cuda_activity_installed = [] {
  profiler::install_device_activity_factory(&cuda::make_cupti_activity_source);
  return true;
}();
#endif

}  // namespace

void install_backend(Device device, Backend* backend) {
  std::lock_guard lock(install_mutex());
  installed()[static_cast<std::size_t>(device)] = backend;
}

std::optional<std::string> unavailable_reason(Device device) {
  if (device == Device::cpu) return std::nullopt;
  {
    std::lock_guard lock(install_mutex());
    if (installed()[static_cast<std::size_t>(device)] != nullptr) return std::nullopt;
  }
#ifdef ATTNPROF_HAVE_CUDA
  // A CUDA build creates its backend lazily: usable when a GPU and driver are.
  return cuda::device_unavailable_reason();
#else
  return std::string(kNoCudaInThisBuild);
#endif
}

bool has_backend(Device device) { return !unavailable_reason(device).has_value(); }

Backend& backend(Device device) {
  if (device == Device::cpu) return cpu::cpu_backend();
  std::lock_guard lock(install_mutex());
  Backend* b = installed()[static_cast<std::size_t>(device)];
#ifdef ATTNPROF_HAVE_CUDA
  if (b == nullptr) {
    // Created on first use; throws UsageError("--device cuda: no usable GPU: <reason>; allowed here: cpu").
    b = &cuda::cuda_backend();
    installed()[static_cast<std::size_t>(device)] = b;
  }
#endif
  if (b == nullptr) {
    throw UsageError(std::string("--device cuda: ") + kNoCudaInThisBuild + "; allowed here: cpu");
  }
  return *b;
}

}  // namespace attnprof::ops
