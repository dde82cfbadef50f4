#include "ops/backend.h"

#include <attnprof/error.h>

#include <array>
#include <mutex>

#include "cpu/cpu_backend.h"

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
}  // namespace

void install_backend(Device device, Backend* backend) {
  std::lock_guard lock(install_mutex());
  installed()[static_cast<std::size_t>(device)] = backend;
}

bool has_backend(Device device) {
  if (device == Device::cpu) return true;
  std::lock_guard lock(install_mutex());
  return installed()[static_cast<std::size_t>(device)] != nullptr;
}

Backend& backend(Device device) {
  if (device == Device::cpu) return cpu::cpu_backend();
  std::lock_guard lock(install_mutex());
  Backend* b = installed()[static_cast<std::size_t>(device)];
  if (b == nullptr) {
    throw UsageError("--device cuda: no CUDA backend is available (this build has no CUDA, or no GPU was found); "
                     "allowed here: cpu");
  }
  return *b;
}

}  // namespace attnprof::ops
