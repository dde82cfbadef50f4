#pragma once
// The CUDA backend's fused-attention entry: the kernels take head dims that are multiples of 8
// (ops/fused_head_dim.h); any other runs through copies padded with zero columns.
#include <attnprof/attention.h>
#include <attnprof/tensor.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/fused_attention.h"

namespace attnprof::cuda {

using FusedLaunch = void (*)(const FusedAttentionArgs& args, cudaStream_t stream);

// Runs `launch` (launch_efficient_attention or launch_flash_attention) on the spec's tensors when
// its head dim is a multiple of 8. Otherwise q, k and v are copied into [B, H, S, D8] buffers (D8:
// head_dim rounded up to 8, the extra columns zero), the kernel writes a padded out and its first
// head_dim columns are copied into `out`; the softmax scale stays 1/sqrt(head_dim). The head dim
// must be in 1..256 (fused_attention_refusal).
void run_fused_attention(const AttentionSpec& spec, Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v,
                         Tensor* lse, FusedLaunch launch, cudaStream_t stream);

// Device bytes run_fused_attention allocates for the padded copies of q, k, v and out (0 when the
// head dim needs none).
std::int64_t padded_copy_bytes(const AttentionSpec& spec);

}  // namespace attnprof::cuda
