#pragma once
// Device memory for Device::cuda: the stream-ordered allocator (cudaMallocAsync) on the backend's
// stream, with a pool that keeps freed blocks (release threshold = max), so repeated forwards
// reuse memory as PyTorch's caching allocator does. Byte statistics are kept by memory.cpp.
//
// The RawAllocator is installed at start-up (static registration), so the first CUDA tensor
// creates the backend lazily; without a GPU it throws the backend's UsageError.
#include <cuda_runtime_api.h>

namespace attnprof::cuda {
// Called by the backend once its stream exists: allocations are ordered on `stream`.
void set_allocation_stream(cudaStream_t stream);
}  // namespace attnprof::cuda
