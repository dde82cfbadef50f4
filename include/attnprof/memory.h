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

}  // namespace attnprof::memory
