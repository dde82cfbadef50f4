// The split-KV decode forward's launches (decode_forward.h): dispatch on head dim and dtype, the
// kernels' attributes once per device, the workspace, the split and combine kernels.
#include "cuda/decode_forward.h"

#include <attnprof/error.h>
#include <attnprof/kernel_overrides.h>
#include <attnprof/tensor.h>

#include <algorithm>
#include <string>

#include "cuda/check.h"
#include "cuda/cuda_backend.h"
#include "cuda/decode_kernel.cuh"
#include "cuda/per_device.h"

namespace attnprof::cuda {
namespace {

int sm_count_of_current_device() {
  static PerDevice<int> counts;
  return counts.get([](int device) {
    if (device < 0) ATTNPROF_CUDA_CHECK(cudaGetDevice(&device));  // throws naming the failure
    int sms = 0;
    ATTNPROF_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    return sms;
  });
}

template <int D, class T>
void launch_typed(const FusedAttentionArgs& args, const decode::DecodeParams& params, cudaStream_t stream) {
  using Tr = decode::DecodeTraits<D>;
  auto split_kernel = decode::flash_decode_splitkv_kernel<D, T>;
  static PerDevice<bool> configured;
  configured.get([&](int device) {
    if (device < 0) ATTNPROF_CUDA_CHECK(cudaGetDevice(&device));
    ATTNPROF_CUDA_CHECK(cudaFuncSetAttribute(split_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Tr::kSmemBytes));
    ATTNPROF_CUDA_CHECK(cudaFuncSetAttribute(split_kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                             cudaSharedmemCarveoutMaxShared));
    return true;
  });
  const dim3 grid(static_cast<unsigned>(args.batch * args.kv_heads * params.row_blocks),
                  static_cast<unsigned>(params.splits));
  split_kernel<<<grid, Tr::kThreads, Tr::kSmemBytes, stream>>>(args, params);
  ATTNPROF_CUDA_CHECK_LAUNCH("flash_decode_splitkv_kernel");
  if (params.splits == 1) return;
  const std::int64_t rows = args.batch * args.heads * args.seq_q;
  decode::flash_decode_splitkv_combine_kernel<D, T><<<static_cast<unsigned>((rows + 3) / 4), 128, 0, stream>>>(args, params);
  ATTNPROF_CUDA_CHECK_LAUNCH("flash_decode_splitkv_combine_kernel");
}

}  // namespace

DecodePlan flash_decode_plan(const DecodeShape& shape) {
  if (!kernel_overrides().flash_schedule.empty()) return {};
  return plan_decode(shape, sm_count_of_current_device());
}

void launch_decode_attention(const FusedAttentionArgs& args, const DecodePlan& plan, cudaStream_t stream) {
  if (args.dtype != DType::bf16 && args.dtype != DType::fp16)
    throw UsageError("dtype " + std::string(dtype_name(args.dtype)) + ": the fused GPU kernels take bf16 or fp16");
  FusedAttentionArgs checked = args;
  // Beyond [-seq_q, seq_k] every row sees all keys or none: the kernel's 32-bit limits stay in range.
  checked.causal_offset = std::clamp<std::int64_t>(args.causal_offset, -args.seq_q, args.seq_k);
  const DecodeShape shape = DecodeShape::of(checked);
  if (!plan.fits(shape))
    throw Error("decode attention: the plan (" + std::to_string(plan.splits) + " splits of " +
                std::to_string(plan.keys_per_split) + " keys) is not one for head_dim " + std::to_string(args.head_dim) +
                ", seq_q " + std::to_string(args.seq_q) + ", seq_k " + std::to_string(args.seq_k));
  Tensor workspace;
  decode::DecodeParams params;
  params.splits = plan.splits;
  params.keys_per_split = static_cast<int>(plan.keys_per_split);
  params.keys = static_cast<int>(plan.keys);
  params.rows = static_cast<int>(plan.rows);
  params.row_blocks = plan.row_blocks;
  params.group = static_cast<int>(args.heads / args.kv_heads);
  if (plan.splits > 1) {
    // The allocator frees in the backend stream's order: the kernels must run on that stream.
    if (stream != backend_stream())
      throw Error("decode attention: launched on another stream than the CUDA backend's, which frees the workspace");
    workspace = Tensor::empty({plan.workspace_bytes(shape)}, DType::boolean, Device::cuda);
    params.partial_o = static_cast<float*>(workspace.raw());
    params.partial_lse = params.partial_o + args.batch * args.heads * args.seq_q * plan.splits * args.head_dim;
  }
  const bool bf16 = args.dtype == DType::bf16;
  if (args.head_dim == 64)
    bf16 ? launch_typed<64, __nv_bfloat16>(checked, params, stream) : launch_typed<64, __half>(checked, params, stream);
  else
    bf16 ? launch_typed<128, __nv_bfloat16>(checked, params, stream) : launch_typed<128, __half>(checked, params, stream);
}

}  // namespace attnprof::cuda
