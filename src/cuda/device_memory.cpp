#include "cuda/device_memory.h"

#include <attnprof/memory.h>

#include <cstdint>
#include <limits>

#include "cuda/check.h"
#include "cuda/cuda_backend.h"

namespace attnprof::cuda {
namespace {

cudaStream_t g_stream = nullptr;

void* allocate_on_stream(std::size_t bytes) {
  // memory.cpp holds its own lock here: creating the backend must not call back into memory::.
  if (g_stream == nullptr) cuda_backend();  // throws UsageError without a GPU
  void* ptr = nullptr;
  // A zero-byte tensor still needs a distinct, valid pointer.
  ATTNPROF_CUDA_CHECK(cudaMallocAsync(&ptr, bytes == 0 ? 16 : bytes, g_stream));
  return ptr;
}

void release_on_stream(void* ptr) {
  // Freed in stream order: a kernel queued earlier that still reads the block finishes first.
  ATTNPROF_CUDA_CHECK(cudaFreeAsync(ptr, g_stream));
}

}  // namespace

memory::RawAllocator device_allocator() { return memory::RawAllocator{&allocate_on_stream, &release_on_stream}; }

void set_allocation_stream(cudaStream_t stream) {
  int device = 0;
  ATTNPROF_CUDA_CHECK(cudaGetDevice(&device));
  cudaMemPool_t pool = nullptr;
  ATTNPROF_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  std::uint64_t keep_everything = std::numeric_limits<std::uint64_t>::max();
  ATTNPROF_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_everything));
  g_stream = stream;
}

void release_cached_memory() {
  ATTNPROF_CUDA_CHECK(cudaStreamSynchronize(g_stream));
  int device = 0;
  ATTNPROF_CUDA_CHECK(cudaGetDevice(&device));
  cudaMemPool_t pool = nullptr;
  ATTNPROF_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  ATTNPROF_CUDA_CHECK(cudaMemPoolTrimTo(pool, 0));
}

}  // namespace attnprof::cuda
