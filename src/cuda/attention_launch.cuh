#pragma once
// Dispatch from FusedAttentionArgs to one instantiation of attention_forward_kernel: dtype × head dim.
#include <attnprof/error.h>
#include <cuda_runtime.h>

#include <string>

#include "cuda/attention_kernel.cuh"
#include "cuda/check.h"

namespace attnprof::cuda::attention {

template <class Tr, class T>
void launch_typed(const FusedAttentionArgs& args, cudaStream_t stream) {
  auto kernel = attention_forward_kernel<Tr, T>;
  // Raising the dynamic limit is needed past 48 KiB; cheap, so done on every launch (no static state).
  ATTNPROF_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Tr::kSmemBytes));
  dim3 grid(static_cast<unsigned>((args.seq_q + Tr::kBlockM - 1) / Tr::kBlockM),
            static_cast<unsigned>(args.batch * args.heads));
  kernel<<<grid, Tr::kThreads, Tr::kSmemBytes, stream>>>(args);
  ATTNPROF_CUDA_CHECK_LAUNCH("attention_forward_kernel");
}

template <template <int> class TraitsFor>
void launch(const FusedAttentionArgs& args, cudaStream_t stream) {
  if (args.batch * args.heads > 65535 * 1024ll || args.seq_q > (1ll << 30) || args.seq_k > (1ll << 30))
    throw Error("fused attention: the problem exceeds the kernel's grid");
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
