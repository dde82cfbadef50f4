#pragma once
// Helpers of the GPU backward tests: poison gradient buffers with a bit pattern no kernel writes,
// and name the element of a gradient farthest from the fp64 reference (for failure messages).
#include <attnprof/attention.h>
#include <attnprof/tensor.h>

#include <cmath>
#include <string>

#include "cuda/gpu_test_util.h"
#include "variants/reference.h"

namespace attnprof::cuda::gpu_testing {

// One problem of the backward tests, on the GPU with batch 2.
struct BackwardCase {
  std::int64_t heads, kv_heads, seq_q, seq_k, head_dim;
  bool causal;
  CausalAlign align;
  Layout layout;
};
inline AttentionSpec backward_spec(const BackwardCase& c, DType dtype) {
  return AttentionSpec{.batch = 2,
                       .heads = c.heads,
                       .kv_heads = c.kv_heads,
                       .seq_q = c.seq_q,
                       .seq_k = c.seq_k,
                       .head_dim = c.head_dim,
                       .dtype = dtype,
                       .causal = c.causal,
                       .causal_align = c.align,
                       .layout = c.layout,
                       .device = Device::cuda};
}

// poison_nan's bit pattern on the device (poison() writes a plain NaN, which a kernel's NaN could
// not be told apart from).
inline void poison_pattern(Tensor& dev) {
  Tensor host = Tensor::empty_strided(dev.shape(), dev.strides(), dev.dtype(), Device::cpu);
  variants::poison_nan(host);
  gpu().copy(dev, host);
}

// A host copy of a dense device tensor with the same strides, byte for byte (to_host goes through a
// conversion kernel for a non-contiguous layout, which need not keep a NaN's bit pattern).
inline Tensor to_host_exact(const Tensor& dev) {
  Tensor host = Tensor::empty_strided(dev.shape(), dev.strides(), dev.dtype(), Device::cpu);
  gpu().copy(host, dev);
  return host;
}

// "[b, h, s, d] = got (want)" of the element of `got` (host, any strides, rank 4) farthest from
// `want` (host, same shape); NaN counts as farthest.
inline std::string worst_element(const Tensor& got, const Tensor& want) {
  double worst = -1;
  std::int64_t at[4] = {0, 0, 0, 0};
  for (std::int64_t a = 0; a < got.size(0); ++a)
    for (std::int64_t b = 0; b < got.size(1); ++b)
      for (std::int64_t c = 0; c < got.size(2); ++c)
        for (std::int64_t d = 0; d < got.size(3); ++d) {
          const double x = get(got, offset4(got, a, b, c, d)), y = get(want, offset4(want, a, b, c, d));
          const double diff = std::isnan(x) ? INFINITY : std::fabs(x - y);
          if (diff > worst) {
            worst = diff;
            at[0] = a, at[1] = b, at[2] = c, at[3] = d;
          }
        }
  return "[" + std::to_string(at[0]) + ", " + std::to_string(at[1]) + ", " + std::to_string(at[2]) + ", " +
         std::to_string(at[3]) + "] = " + std::to_string(get(got, offset4(got, at[0], at[1], at[2], at[3]))) +
         " (want " + std::to_string(get(want, offset4(want, at[0], at[1], at[2], at[3]))) + ")";
}

}  // namespace attnprof::cuda::gpu_testing
