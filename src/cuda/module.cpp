// The entry point libattnprof looks up after opening libattnprof_cuda.so (src/run/cuda_module.cpp).
#include "ops/device_module.h"

#include "cuda/cuda_backend.h"
#include "cuda/cupti_collector.h"
#include "cuda/device_memory.h"

extern "C" __attribute__((visibility("default"))) const attnprof::ops::DeviceModule* attnprof_device_module() {
  static const attnprof::ops::DeviceModule module{attnprof::ops::kDeviceModuleAbi,
                                                  &attnprof::cuda::device_unavailable_reason,
                                                  &attnprof::cuda::cuda_backend,
                                                  &attnprof::cuda::make_cupti_activity_source,
                                                  attnprof::cuda::device_allocator()};
  return &module;
}
