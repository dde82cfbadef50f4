#pragma once
// Launches flash_decode_splitkv_kernel<D, T, G> (decode_kernel.cuh) with a prepared launch
// (decode_forward.h's prepare_decode): the production geometries from decode_forward.cu, the others
// from bench/decode_configs and the GPU tests' geometry probe.
#include <attnprof/error.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "cuda/check.h"
#include "cuda/decode_forward.h"
#include "cuda/decode_kernel.cuh"
#include "cuda/hopper/flash_hopper.h"
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
  if (p.splits > 1 && !G::clusters(p.splits) && (p.partial_o == nullptr || p.counters == nullptr))
    throw Error("decode attention: this geometry merges " + std::to_string(p.splits) +
                " splits through a workspace and arrival counters, and the launch was prepared without them");
  if (G::clusters(p.splits)) {
    // The cluster merge is in the sm_90a machine code only (elsewhere the kernel would trap).
    if (auto why = hopper::current_device_not_hopper())
      throw Error("decode attention: " + std::to_string(p.splits) + " splits merged in a thread block cluster: " + *why);
    // The splits of an item (grid y) are one cluster: 1 × splits × 1.
    cudaLaunchAttribute cluster{};
    cluster.id = cudaLaunchAttributeClusterDimension;
    cluster.val.clusterDim.x = 1;
    cluster.val.clusterDim.y = static_cast<unsigned>(p.splits);
    cluster.val.clusterDim.z = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = decode_grid<D, G>(args, p, sm_count);
    config.blockDim = dim3(Tr::kThreads);
    config.dynamicSmemBytes = Tr::kSmemBytes;
    config.stream = stream;
    config.attrs = &cluster;
    config.numAttrs = 1;
    ATTNPROF_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, args, p));
  } else {
    kernel<<<decode_grid<D, G>(args, p, sm_count), Tr::kThreads, Tr::kSmemBytes, stream>>>(args, p);
  }
  ATTNPROF_CUDA_CHECK_LAUNCH("flash_decode_splitkv_kernel");
}

}  // namespace attnprof::cuda::decode
