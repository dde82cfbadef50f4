#pragma once
// Δ = rowsum(dO ⊙ O), the backward's per-row term (dS = P ⊙ (dP − Δ)), summed in fp32 by several
// threads a row: flash_bwd_dot_do_o_kernel (attention_backward_kernel.cuh, one warp a row) and
// flash_backward_prep_kernel (hopper/flash_bwd_kernel.cuh, four threads a row).
#include <cstdint>

#include "cuda/attention_backward.h"
#include "cuda/device_types.cuh"

namespace attnprof::cuda {

// This thread's part of Δ for query `row` of (batch b, head h): the products over the row's 8-column
// chunks part, part + parts, … below head_dim (16-byte loads of O and dO).
template <class T>
__device__ __forceinline__ float delta_part(const FusedBackwardArgs& args, std::int64_t b, std::int64_t h,
                                            std::int64_t row, int part, int parts) {
  const T* o = static_cast<const T*>(args.fwd.o) + b * args.fwd.o_stride[0] + h * args.fwd.o_stride[1] +
               row * args.fwd.o_stride[2];
  const T* d = static_cast<const T*>(args.dout) + b * args.do_stride[0] + h * args.do_stride[1] + row * args.do_stride[2];
  float sum = 0.0f;
  for (int c = part; c < static_cast<int>(args.fwd.head_dim) / 8; c += parts) {
    float x[8], y[8];
    load_floats<T, 8>(x, o + c * 8);
    load_floats<T, 8>(y, d + c * 8);
#pragma unroll
    for (int e = 0; e < 8; ++e) sum += x[e] * y[e];
  }
  return sum;
}

}  // namespace attnprof::cuda
