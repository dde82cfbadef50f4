#pragma once
// Host side of the split-KV decode forward (kernels in decode_kernel.cuh, the choice in
// decode_plan.h): what `flash` runs on a GPU when few query rows meet many keys.
#include <cuda_runtime_api.h>

#include "cuda/decode_plan.h"
#include "cuda/fused_attention.h"

namespace attnprof::cuda {

// plan_decode on the current device's SM count, or no decode when KernelOverrides::flash_schedule
// names a kernel (--flash-schedule: that kernel runs, so one run can time the two paths).
DecodePlan flash_decode_plan(const DecodeShape& shape);

// The split kernel, then (plan.splits > 1) the combine kernel, on `stream`, the CUDA backend's
// (backend_stream()). The workspace is a device tensor of plan.workspace_bytes (through the
// allocator: the run's memory statistics and the trace's memory events count it), released in
// that stream's order after the combine. Throws UsageError for a dtype other than bf16/fp16, Error
// for a plan that is not plan.fits(args' shape) or another stream.
void launch_decode_attention(const FusedAttentionArgs& args, const DecodePlan& plan, cudaStream_t stream);

}  // namespace attnprof::cuda
