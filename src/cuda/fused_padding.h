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

// Device bytes run_fused_backward (attention_backward.h) allocates for a head dim that is not a
// multiple of 8: padded copies of q, k, v, out and dout, and the padded dq, dk and dv the kernels
// write (0 when the head dim needs none).
std::int64_t padded_backward_copy_bytes(const AttentionSpec& spec);

// A contiguous [B, H, S, padded_dim] device copy of `src` ([B, H, S, D] in any layout, D <
// padded_dim) whose columns past D are zero.
Tensor padded_copy(const Tensor& src, std::int64_t padded_dim, cudaStream_t stream);

// Columns [first, first + count) of a [B, H, S, D] tensor with unit stride in d, as a view.
Tensor columns(const Tensor& padded, std::int64_t first, std::int64_t count);

}  // namespace attnprof::cuda
