#pragma once
// Launches flash_decode_splitkv_kernel<D, T, G> (decode_kernel.cuh) with a prepared launch
// (decode_forward.h's prepare_decode): the production geometries from decode_forward.cu, the others
// from bench/decode_configs and the GPU tests' geometry probe.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>

#include "cuda/check.h"
#include "cuda/decode_forward.h"
#include "cuda/decode_kernel.cuh"
#include "cuda/kernel_attributes.h"

namespace attnprof::cuda::decode {

// The grid: (batch · kv heads · row blocks, splits), or with G::kPersistent min(that many CTAs,
// SMs × G::kCtasPerSm) along x.
template <int D, class G>
dim3 decode_grid(const FusedAttentionArgs& args, const DecodeParams& p, int sm_count) {
  const std::int64_t xs = args.batch * args.kv_heads * p.row_blocks;
  if constexpr (G::kPersistent)
    return dim3(static_cast<unsigned>(std::min<std::int64_t>(xs * p.splits, std::int64_t{sm_count} * G::kCtasPerSm)));
  else
    return dim3(static_cast<unsigned>(xs), static_cast<unsigned>(p.splits));
}

template <int D, class T, class G>
void launch_decode_kernel(const FusedAttentionArgs& args, const DecodeParams& p, cudaStream_t stream, int sm_count) {
  using Tr = DecodeTraits<D, G>;
  auto kernel = flash_decode_splitkv_kernel<D, T, G>;
  configure_kernel_once(reinterpret_cast<const void*>(kernel), Tr::kSmemBytes, Carveout::max_shared);
  kernel<<<decode_grid<D, G>(args, p, sm_count), Tr::kThreads, Tr::kSmemBytes, stream>>>(args, p);
  ATTNPROF_CUDA_CHECK_LAUNCH("flash_decode_splitkv_kernel");
}

}  // namespace attnprof::cuda::decode
