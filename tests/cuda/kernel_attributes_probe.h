#pragma once
// Two kernels of the tests' own for configure_kernel_once (src/cuda/kernel_attributes.h): each
// writes the last byte of its dynamic shared memory and reads it back, so a launch with more than
// 48 KiB fails unless the kernel's limit was raised.
#include <cuda_runtime_api.h>

namespace attnprof::cuda::attributes_testing {

// Kernel `which` (0 or 1: two instantiations of one template, two addresses).
const void* probe_kernel(int which);
// Launches kernel `which`, one CTA of 32 threads with smem_bytes of dynamic shared memory, and
// returns the launch's error (cudaSuccess or the reason) after synchronizing; *out = 7 + which
// when it ran.
cudaError_t launch_probe(int which, int smem_bytes, int* out_device);

}  // namespace attnprof::cuda::attributes_testing
