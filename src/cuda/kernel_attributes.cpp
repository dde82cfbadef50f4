#include "cuda/kernel_attributes.h"

#include <cuda_runtime_api.h>

#include <mutex>
#include <set>
#include <utility>

#include "cuda/check.h"

namespace attnprof::cuda {

void configure_kernel_once(const void* kernel, int dynamic_smem_bytes, Carveout carveout) {
  static std::mutex mutex;
  static std::set<std::pair<int, const void*>> configured;
  int device = -1;
  ATTNPROF_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mutex);
  if (configured.count({device, kernel}) != 0) return;
  ATTNPROF_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, dynamic_smem_bytes));
  if (carveout == Carveout::max_shared)
    ATTNPROF_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
  configured.insert({device, kernel});
}

}  // namespace attnprof::cuda
