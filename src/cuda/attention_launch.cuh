#pragma once
// Dispatch from FusedAttentionArgs to one instantiation of attention_forward_kernel: dtype × head dim.
#include <attnprof/error.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "cuda/attention_kernel.cuh"
#include "cuda/check.h"

namespace attnprof::cuda::attention {

// The kernel's index arithmetic is 32-bit within a (batch, head): sequence positions, the causal
// limit (row + offset + a tile) and in-tile row offsets (kBlockM·stride). Checks those bounds and
// clamps causal_offset to [-seq_q, seq_k] (beyond them every row sees all keys, or none).
template <class Tr>
FusedAttentionArgs checked_for_kernel(const FusedAttentionArgs& args) {
  // grid.y is batch·heads (at most 65535); grid.x the query blocks.
  if (args.batch * args.heads > 65535 || args.seq_q + args.seq_k > (1ll << 30))
    throw Error("fused attention: batch·heads " + std::to_string(args.batch * args.heads) + ", seq_q + seq_k " +
                std::to_string(args.seq_q + args.seq_k) + ": the kernel takes batch·heads ≤ 65535 and seq_q + seq_k ≤ 2^30");
  const std::int64_t rows = std::max(Tr::kBlockM, Tr::kBlockN);
  for (const std::int64_t* stride : {args.q_stride, args.k_stride, args.v_stride, args.o_stride})
    if (rows * stride[2] >= (1ll << 31))
      throw Error("fused attention: a row stride of " + std::to_string(stride[2]) +
                  " elements exceeds the kernel's 32-bit in-tile offsets");
  FusedAttentionArgs checked = args;
  checked.causal_offset = std::clamp<std::int64_t>(args.causal_offset, -args.seq_q, args.seq_k);
  return checked;
}

template <class Tr, class T>
void launch_typed(const FusedAttentionArgs& args, cudaStream_t stream) {
  const FusedAttentionArgs checked = checked_for_kernel<Tr>(args);
  auto kernel = attention_forward_kernel<Tr, T>;
  // Raising the dynamic limit is needed past 48 KiB; cheap, so done on every launch (no static state).
  ATTNPROF_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Tr::kSmemBytes));
  dim3 grid(static_cast<unsigned>((checked.seq_q + Tr::kBlockM - 1) / Tr::kBlockM),
            static_cast<unsigned>(checked.batch * checked.heads));
  kernel<<<grid, Tr::kThreads, Tr::kSmemBytes, stream>>>(checked);
  ATTNPROF_CUDA_CHECK_LAUNCH("attention_forward_kernel");
}

template <template <int> class TraitsFor>
void launch(const FusedAttentionArgs& args, cudaStream_t stream) {
  const bool bf16 = args.dtype == DType::bf16;
  if (args.dtype != DType::bf16 && args.dtype != DType::fp16)
    throw UsageError("--dtype " + std::string(dtype_name(args.dtype)) + ": the fused GPU kernels take bf16 or fp16");
  switch (args.head_dim) {
    case 64:
      bf16 ? launch_typed<TraitsFor<64>, __nv_bfloat16>(args, stream) : launch_typed<TraitsFor<64>, __half>(args, stream);
      return;
    case 128:
      bf16 ? launch_typed<TraitsFor<128>, __nv_bfloat16>(args, stream)
           : launch_typed<TraitsFor<128>, __half>(args, stream);
      return;
    default:
      throw UsageError("--head-dim " + std::to_string(args.head_dim) + ": the fused GPU kernels take 64 or 128");
  }
}

}  // namespace attnprof::cuda::attention
