#pragma once
// A value worked out once per CUDA device and kept: device queries asked on every forward (SM count,
// "is this a Hopper"; kernel attributes are kernel_attributes.h's). Each costs runtime calls, and under
// CUPTI every runtime call costs a microsecond or more of the forward's CPU time.
#include <cuda_runtime_api.h>

#include <array>
#include <mutex>
#include <optional>

namespace attnprof::cuda {

template <class T>
class PerDevice {
 public:
  static constexpr int kMaxDevices = 64;

  // make(device) for the current device, the first time it is asked there; the kept value after.
  // Without a device it can name (cudaGetDevice fails) or past kMaxDevices, make runs every time
  // and decides itself what to do about it (throw, or a value that says why).
  template <class Make>
  T get(Make&& make) {
    int device = -1;
    if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kMaxDevices) return make(device);
    std::lock_guard<std::mutex> lock(mutex_);
    std::optional<T>& kept = values_[static_cast<std::size_t>(device)];
    if (!kept) kept = make(device);
    return *kept;
  }

 private:
  std::mutex mutex_;
  std::array<std::optional<T>, kMaxDevices> values_{};
};

}  // namespace attnprof::cuda
