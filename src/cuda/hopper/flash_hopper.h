#pragma once
// Host side of the sm_90a `flash` forward (flash_hopper.cu: wgmma + TMA + mbarriers, warp
// specialised) and the choice between it and the mma.sync kernel (flash_forward.cu) that
// launch_flash_attention makes on every call.
#include <cuda_runtime_api.h>

#include "cuda/fused_attention.h"

namespace attnprof::cuda::hopper {

enum class FlashKernel { sm80, sm90 };

// sm90 on a compute capability 9.0 device, sm80 elsewhere. ATTNPROF_FLASH_KERNEL=sm80|sm90 overrides
// it (so one run can time both); ATTNPROF_FLASH_CONFIG (a tiling of the sm80 kernel, gpu_bench's
// `flash@k`) set to anything but 0 implies sm80 unless ATTNPROF_FLASH_KERNEL says otherwise.
// Throws UsageError for another ATTNPROF_FLASH_KERNEL value, or for sm90 on a device without it.
FlashKernel flash_kernel_choice();

// The sm_90a kernel: bf16/fp16, head_dim 64 or 128, causal (j <= i + causal_offset) or not, GQA,
// any strides with unit stride in d and 16-byte aligned rows, optional LSE. Does not synchronise.
// Throws UsageError for a dtype or head dim it does not take (naming the flag), Error for a device
// that is not compute capability 9.0, a problem beyond its grid, or a failed CUDA call.
void launch_flash_attention_sm90(const FusedAttentionArgs& args, cudaStream_t stream);

}  // namespace attnprof::cuda::hopper
