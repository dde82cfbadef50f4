#pragma once
// Allocation with per-device byte statistics. Every Tensor allocation goes through here, so
// "peak extra memory of one forward" is peak_bytes after reset_peak minus the bytes live before.
#include <attnprof/tensor.h>

#include <cstddef>
#include <cstdint>

namespace attnprof::memory {

struct Stats {
  std::int64_t current_bytes = 0;
  std::int64_t peak_bytes = 0;
  std::int64_t allocations = 0;
};

void* allocate(Device device, std::size_t bytes);
void release(Device device, void* ptr, std::size_t bytes);
Stats stats(Device device);
void reset_peak(Device device);  // peak := current

// Device backends (the CUDA one) install their raw allocator here.
struct RawAllocator {
  void* (*allocate)(std::size_t bytes) = nullptr;
  void (*release)(void* ptr) = nullptr;
};
void install_allocator(Device device, RawAllocator allocator);
bool has_allocator(Device device);

// Called after every allocate (bytes > 0) and release (bytes < 0) with the device's bytes in use
// after it, outside the allocator's lock. The profiler installs one when a recording session
// begins; nullptr removes it.
using AllocationObserver = void (*)(Device device, const void* ptr, std::int64_t signed_bytes,
                                    std::int64_t total_allocated);
void set_allocation_observer(AllocationObserver observer);

// Copies a host tensor into a device tensor of the same shape and strides and waits for the copy.
// The assembly of the backends (src/run) installs one per device; make_inputs uploads through it.
using Uploader = void (*)(Tensor& device_tensor, const Tensor& host_tensor);
void install_uploader(Device device, Uploader uploader);
void upload(Tensor& device_tensor, const Tensor& host_tensor);

}  // namespace attnprof::memory
