#pragma once
// Geometries of the split-KV decode kernel other than the two-CTA production one (decode_kernel.cuh's
// DecodeGeometry), instantiated for the tests (sm_90a, bf16): a persistent grid, 2 warps of 6
// stages, and (D 128) 8 warps at one CTA per SM merging items of 2 splits in thread block
// clusters (production's kDecodeGeometry128OneCta, here the tests' own copy of the kernel), so what
// bench/decode_configs times is also checked against fp64 (but for the bench's copy of the one-CTA
// geometry that merges 2 splits through the workspace, which the bench checks against production).
#include <cuda_runtime_api.h>

#include "cuda/decode_forward.h"
#include "cuda/fused_attention.h"

namespace attnprof::cuda::decode_testing {

inline constexpr int kGeometries = 3;
// "w4 s3 t8K c2 persistent" and the like.
const char* geometry_name(int which);
// Whether geometry `which` is instantiated at this head dim (64 or 128).
bool geometry_takes(int which, std::int64_t head_dim);
// Launches geometry `which` (bf16, head dim 64 or 128; geometry_takes must hold) with a prepared
// launch (decode::prepare_decode) on `stream`.
void launch_geometry(int which, const FusedAttentionArgs& args, const decode::DecodeParams& params, cudaStream_t stream);

}  // namespace attnprof::cuda::decode_testing
