#pragma once
// Host side of `flash`'s sm_90a backward (kernel: flash_bwd_traits.cuh, flash_bwd_kernel.cuh) and
// the choice between it and attention_backward.cu's no-atomics kernels.
#include <attnprof/attention.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/attention_backward.h"

namespace attnprof::cuda::hopper {

// Whether flash's backward runs the sm_90a kernel for `spec` on the current device: flash's schedule
// is not sm80 (flash_schedule_choice: a compute capability 9.0 device and no --flash-schedule sm80),
// the deterministic mode is off (KernelOverrides::deterministic: the sm_90a kernel sums dQ with
// atomics) and the head dim is one the kernels take once padded to a multiple of 8 (1..128;
// run_fused_backward pads the others). Throws what flash_schedule_choice throws.
bool flash_backward_runs_sm90(const AttentionSpec& spec);

// The workspace the sm_90a backward needs beside Δ, per (batch, head, 64-row query block): the fp32
// dQ accumulator's 64 × kernel-head-dim tile (kernel head dim: 64 for head dims up to 64, else 128)
// and the block's LSE (base 2) and Δ padded to 64 rows, 4 bytes an element; then 16 bytes for the
// kernel's tile counter.
std::int64_t flash_backward_sm90_accumulator_bytes(const AttentionSpec& spec);

// The preparation kernel (Δ computed, the padded LSE and Δ written, the accumulator zeroed), the
// sm_90a kernel, then dQ from the accumulator, in stream order, after launch_fused_backward's checks
// (which calls this). `dq_accum`:
// flash_backward_sm90_accumulator_bytes of device memory. bf16 or fp16, head_dim a multiple of 8 up
// to 128 (UsageError otherwise), TMA-aligned tensors (Error from the tensor map otherwise); Error on
// a device that is not compute capability 9.0.
void launch_flash_backward_sm90(const FusedBackwardArgs& args, float* dq_accum, cudaStream_t stream);

}  // namespace attnprof::cuda::hopper
