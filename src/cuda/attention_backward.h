#pragma once
// Host entry of the GPU FlashAttention-2 backward that `efficient` runs, and `flash` where its
// sm_90a kernel does not (hopper/flash_bwd.h: the deterministic mode, a device other than compute
// capability 9.0) (attention_backward.cu, kernels in attention_backward_kernel.cuh). Three kernels, no atomics:
// flash_bwd_dot_do_o_kernel (Δ = rowsum(dO ⊙ O) per query row, fp32), flash_bwd_dkdv_kernel (one
// CTA per batch, kv head and 64-key block, two at D 256, a 128-column half of dK and dV each: dK
// and dV summed over the query heads of its group in registers and written once) and
// flash_bwd_dq_kernel (one CTA per batch, head and 64-row query block: dQ summed over the visible
// key blocks and written once). Every output element has one
// writer and every sum a fixed order, so the gradients are bit-identical run to run.
#include <attnprof/attention.h>
#include <attnprof/tensor.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <optional>
#include <string>

#include "cuda/fused_attention.h"

namespace attnprof::cuda {

// The forward's arguments (q, k, v, its out as o and its LSE, the problem, the strides in elements
// for [B, H, S, D] indexing with unit stride in d) and the backward's own tensors.
struct FusedBackwardArgs {
  FusedAttentionArgs fwd;  // lse: the forward's fp32 [B, H, Sq], natural log, read only
  const void* dout = nullptr;
  float* delta = nullptr;  // fp32 [B, H, Sq] contiguous: Δ, written by the first kernel
  void* dq = nullptr;
  void* dk = nullptr;
  void* dv = nullptr;
  std::int64_t do_stride[3]{}, dq_stride[3]{}, dk_stride[3]{}, dv_stride[3]{};  // batch, head, seq
};

// Runs the backward on `stream` for device tensors in [B, H, S, D] indexing (any layout through the
// strides): checks the tensors' dtype, device and shape, allocates Δ (fp32 [B, H, Sq], the bytes
// ops::Backend's default fused_backward_workspace_bytes counts). A head dim that is a multiple of 8
// runs on the tensors themselves (unit stride in d and 16-byte aligned rows checked); any other in
// 1..256 through zero-padded copies of q, k, v, out and dout and padded gradients whose first
// head_dim columns are copied out (fused_padding.h, padded_backward_copy_bytes); UsageError past
// 256. `sm90`: flash's sm_90a kernel (hopper/flash_bwd.h; also allocates its fp32 dQ accumulator)
// instead of the three kernels here.
void run_fused_backward(const AttentionSpec& spec, Tensor& dq, Tensor& dk, Tensor& dv, const Tensor& q, const Tensor& k,
                        const Tensor& v, const Tensor& out, const Tensor& lse, const Tensor& dout, cudaStream_t stream,
                        bool sm90 = false);

// The launches alone (attention_backward.cu): Δ, then dK/dV, then dQ; or with `sm90_dq_accum` only
// hopper::launch_flash_backward_sm90 with that accumulator (which computes Δ itself).
void launch_fused_backward(const FusedBackwardArgs& args, cudaStream_t stream, float* sm90_dq_accum = nullptr);

}  // namespace attnprof::cuda
