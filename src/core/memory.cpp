#include <attnprof/error.h>
#include <attnprof/memory.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <new>
#include <string>

namespace attnprof::memory {
namespace {

constexpr std::size_t kCpuAlignment = 64;  // one cache line; also a full zmm register

struct DeviceState {
  std::mutex mutex;
  Stats stats;
  RawAllocator raw;
  Uploader uploader = nullptr;
};

std::atomic<AllocationObserver> g_observer{nullptr};

void notify(Device device, const void* ptr, std::int64_t signed_bytes, std::int64_t total) {
  if (AllocationObserver observer = g_observer.load(std::memory_order_acquire)) observer(device, ptr, signed_bytes, total);
}

std::array<DeviceState, 2>& states() {
  static std::array<DeviceState, 2> all;
  return all;
}

DeviceState& state(Device device) { return states()[static_cast<std::size_t>(device)]; }

void* cpu_allocate(std::size_t bytes) {
  std::size_t rounded = (bytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
  return std::aligned_alloc(kCpuAlignment, rounded == 0 ? kCpuAlignment : rounded);
}
void cpu_release(void* ptr) { std::free(ptr); }

}  // namespace

void install_allocator(Device device, RawAllocator allocator) {
  DeviceState& s = state(device);
  std::lock_guard lock(s.mutex);
  s.raw = allocator;
}

void set_allocation_observer(AllocationObserver observer) { g_observer.store(observer, std::memory_order_release); }

void install_uploader(Device device, Uploader uploader) {
  DeviceState& s = state(device);
  std::lock_guard lock(s.mutex);
  s.uploader = uploader;
}

void upload(Tensor& device_tensor, const Tensor& host_tensor) {
  Uploader uploader = nullptr;
  {
    DeviceState& s = state(device_tensor.device());
    std::lock_guard lock(s.mutex);
    uploader = s.uploader;
  }
  if (uploader == nullptr) throw UsageError("device cuda: this build has no CUDA backend");
  uploader(device_tensor, host_tensor);
}

bool has_allocator(Device device) {
  if (device == Device::cpu) return true;
  DeviceState& s = state(device);
  std::lock_guard lock(s.mutex);
  return s.raw.allocate != nullptr;
}

void* allocate(Device device, std::size_t bytes) {
  DeviceState& s = state(device);
  void* ptr = nullptr;
  std::int64_t total = 0;
  {
    std::lock_guard lock(s.mutex);
    if (device == Device::cpu) {
      ptr = cpu_allocate(bytes);
      if (ptr == nullptr) throw std::bad_alloc();
    } else {
      if (s.raw.allocate == nullptr) throw UsageError("device cuda: this build has no CUDA backend");
      ptr = s.raw.allocate(bytes);  // throws on failure
    }
    s.stats.current_bytes += static_cast<std::int64_t>(bytes);
    s.stats.peak_bytes = std::max(s.stats.peak_bytes, s.stats.current_bytes);
    ++s.stats.allocations;
    total = s.stats.current_bytes;
  }
  notify(device, ptr, static_cast<std::int64_t>(bytes), total);
  return ptr;
}

void release(Device device, void* ptr, std::size_t bytes) {
  if (ptr == nullptr) return;
  DeviceState& s = state(device);
  std::int64_t total = 0;
  {
    std::lock_guard lock(s.mutex);
    if (device == Device::cpu) {
      cpu_release(ptr);
    } else {
      s.raw.release(ptr);
    }
    s.stats.current_bytes -= static_cast<std::int64_t>(bytes);
    total = s.stats.current_bytes;
  }
  notify(device, ptr, -static_cast<std::int64_t>(bytes), total);
}

Stats stats(Device device) {
  DeviceState& s = state(device);
  std::lock_guard lock(s.mutex);
  return s.stats;
}

void reset_peak(Device device) {
  DeviceState& s = state(device);
  std::lock_guard lock(s.mutex);
  s.stats.peak_bytes = s.stats.current_bytes;
}

}  // namespace attnprof::memory
