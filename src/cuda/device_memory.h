#pragma once
// Device memory for Device::cuda: the stream-ordered allocator (cudaMallocAsync) on the backend's
// stream, with a pool that keeps freed blocks (release threshold = max), so repeated forwards
// reuse memory as PyTorch's caching allocator does. Byte statistics are kept by memory.cpp.
#include <cuda_runtime_api.h>

namespace attnprof::cuda {
// Installs the RawAllocator for Device::cuda; allocations are ordered on `stream`.
void install_device_allocator(cudaStream_t stream);
}  // namespace attnprof::cuda
