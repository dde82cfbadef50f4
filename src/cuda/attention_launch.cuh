#pragma once
// Dispatch from FusedAttentionArgs to one instantiation of attention_forward_kernel: dtype × head dim.
// Head dims go to the specialisation ops::fused_head_dim_route names: efficient and flash have
// their own tilings at D 64 and 128 (efficient_forward.cu, flash_forward.cu) and share one at D 32,
// 96, 192 and 256 (attention_shared_dims.cu).
#include <attnprof/error.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "cuda/attention_kernel.cuh"
#include "cuda/check.h"
#include "cuda/kernel_attributes.h"
#include "ops/fused_head_dim.h"

namespace attnprof::cuda::attention {

// The kernel's index arithmetic is 32-bit within a (batch, head): sequence positions, the causal
// limit (row + offset + a tile) and in-tile row offsets (kBlockM·stride). Checks those bounds and
// clamps causal_offset to [-seq_q, seq_k] (beyond them every row sees all keys, or none). The
// head dim must be a multiple of 8 no larger than the kernel's (the chunks past it are zero-filled).
template <class Tr>
FusedAttentionArgs checked_for_kernel(const FusedAttentionArgs& args) {
  if (args.head_dim < 8 || args.head_dim % 8 != 0 || args.head_dim > Tr::kHeadDim)
    throw Error("fused attention: head_dim " + std::to_string(args.head_dim) + " on the D " +
                std::to_string(Tr::kHeadDim) + " kernel, which takes multiples of 8 up to " + std::to_string(Tr::kHeadDim));
  // A 1-D grid of query blocks × batch·heads (BlockSchedule), at most 2³¹ − 1 blocks.
  const std::int64_t blocks = (args.seq_q + Tr::kBlockM - 1) / Tr::kBlockM * args.batch * args.heads;
  if (blocks >= (1ll << 31) || args.seq_q + args.seq_k > (1ll << 30))
    throw Error("fused attention: " + std::to_string(blocks) + " CTAs, seq_q + seq_k " +
                std::to_string(args.seq_q + args.seq_k) + ": the kernel takes < 2^31 CTAs and seq_q + seq_k ≤ 2^30");
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
  // All of the unified L1/shared array as shared memory: the kernel reads global memory only through
  // cp.async.cg (L2), and the 3-CTA configurations need 3 × 48 KiB resident.
  configure_kernel_once(reinterpret_cast<const void*>(kernel), Tr::kSmemBytes, Carveout::max_shared);
  const int m_blocks = static_cast<int>((checked.seq_q + Tr::kBlockM - 1) / Tr::kBlockM);
  const int bh_count = static_cast<int>(checked.batch * checked.heads);
  const BlockSchedule schedule =
      BlockSchedule::make(m_blocks, bh_count, checked.seq_k * checked.head_dim * 2 * static_cast<std::int64_t>(sizeof(T)));
  const unsigned grid = static_cast<unsigned>(static_cast<std::int64_t>(m_blocks) * bh_count);
  kernel<<<grid, Tr::kThreads, Tr::kSmemBytes, stream>>>(checked, schedule);
  ATTNPROF_CUDA_CHECK_LAUNCH("attention_forward_kernel");
}

template <class Tr>
void launch_dtype(const FusedAttentionArgs& args, cudaStream_t stream) {
  if (args.dtype == DType::bf16)
    launch_typed<Tr, __nv_bfloat16>(args, stream);
  else if (args.dtype == DType::fp16)
    launch_typed<Tr, __half>(args, stream);
  else
    throw UsageError("dtype " + std::string(dtype_name(args.dtype)) + ": the fused GPU kernels take bf16 or fp16");
}

// The specialisation that runs args.head_dim. The kernels take a multiple of 8 up to 256; the CUDA
// backend runs any other head dim through a padded copy (fused_padding.cpp) before it gets here.
inline std::int64_t kernel_head_dim(const FusedAttentionArgs& args) {
  const auto route = ops::fused_head_dim_route(args.head_dim);
  if (!route || route->padded_copy())
    throw UsageError("head_dim " + std::to_string(args.head_dim) + ": the fused GPU kernels take a multiple of 8 up to " +
                     std::to_string(ops::kFusedMaxHeadDim) + " (the CUDA backend pads the others)");
  return route->kernel_dim;
}

// The D 32, 96, 192 and 256 specialisations, one tiling each for efficient and flash's sm80 path
// (attention_shared_dims.cu); Error for a head dim that kernel_head_dim sends elsewhere.
void launch_shared_dims(const FusedAttentionArgs& args, cudaStream_t stream);

}  // namespace attnprof::cuda::attention
