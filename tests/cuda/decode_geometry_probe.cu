#include "cuda/decode_geometry_probe.h"

#include <attnprof/error.h>

#include <string>

#include "cuda/decode_launch.cuh"

namespace attnprof::cuda::decode_testing {
namespace {

using Persistent = decode::DecodeGeometry<4, 3, 8, 2, true>;
using TwoWarps = decode::DecodeGeometry<2, 6, 8, 2>;
// Production's kDecodeGeometry128OneCta, items of 2 splits merged in clusters. D 128 only:
// 16 threads a row merge 8 columns each.
using EightWarps = decode::GeometryOf<kDecodeGeometry128OneCta>;

template <int D>
void launch_at(int which, const FusedAttentionArgs& args, const decode::DecodeParams& p, cudaStream_t stream) {
  const int sms = decode::sm_count_of_current_device();
  if (which == 0) return decode::launch_decode_kernel<D, __nv_bfloat16, Persistent>(args, p, stream, sms);
  if (which == 1) return decode::launch_decode_kernel<D, __nv_bfloat16, TwoWarps>(args, p, stream, sms);
  if constexpr (D == 128) return decode::launch_decode_kernel<D, __nv_bfloat16, EightWarps>(args, p, stream, sms);
  throw Error("decode geometry " + std::to_string(which) + " is not instantiated at head_dim " + std::to_string(D));
}

}  // namespace

const char* geometry_name(int which) {
  static const char* const names[kGeometries] = {"w4 s3 t8K c2 persistent", "w2 s6 t8K c2", "w8 s3 t8K c1 cluster"};
  return which >= 0 && which < kGeometries ? names[which] : "no such geometry";
}

bool geometry_takes(int which, std::int64_t head_dim) {
  return which >= 0 && which < kGeometries && (head_dim == 128 || (head_dim == 64 && which != 2));
}

void launch_geometry(int which, const FusedAttentionArgs& args, const decode::DecodeParams& params, cudaStream_t stream) {
  if (args.dtype != DType::bf16 || !geometry_takes(which, args.head_dim))
    throw Error(std::string("decode geometry ") + geometry_name(which) + " is not instantiated for this dtype and head dim");
  if (args.head_dim == 64) return launch_at<64>(which, args, params, stream);
  launch_at<128>(which, args, params, stream);
}

}  // namespace attnprof::cuda::decode_testing
