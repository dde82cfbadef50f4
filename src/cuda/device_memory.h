#pragma once
// Device memory for Device::cuda: the stream-ordered allocator (cudaMallocAsync) on the backend's
// stream, with a pool that keeps freed blocks (release threshold = max), so repeated forwards
// reuse memory as PyTorch's caching allocator does. Byte statistics are kept by memory.cpp.
//
// The module hands its RawAllocator to libattnprof (ops::DeviceModule), whose allocator for
// Device::cuda opens the module on the first CUDA tensor; allocating creates the backend lazily,
// and without a GPU throws the backend's UsageError.
#include <attnprof/memory.h>
#include <cuda_runtime_api.h>

namespace attnprof::cuda {
// cudaMallocAsync / cudaFreeAsync on the backend's stream.
memory::RawAllocator device_allocator();
// Called by the backend once its stream exists: allocations are ordered on `stream`.
void set_allocation_stream(cudaStream_t stream);
// Gives the device back every block the pool keeps for reuse (after the stream's work): what
// another process on the same GPU may then allocate.
void release_cached_memory();
}  // namespace attnprof::cuda
