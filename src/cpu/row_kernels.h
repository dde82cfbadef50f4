#pragma once
// Row kernels over contiguous fp32 rows, dispatched on kernel_isa(): AVX-512 (row_kernels_avx512.cpp)
// or portable loops (row_kernels_portable.cpp). The softmax-style ops and the conversions of the
// elementwise ops run on them; no scalar std::exp anywhere.
#include <attnprof/dtype.h>

#include <cstdint>

#include "cpu/cpu_features.h"

namespace attnprof::cpu {

struct RowKernels {
  // max over x[0..n); −inf when n == 0.
  float (*max)(const float* x, std::int64_t n);
  // dst[i] = 2^((x[i] − m)·c); returns Σ dst[i]. dst may alias x. Subtracting before scaling keeps
  // x − m exact for scores of any magnitude (|x| ~ 1e8 from |q|,|k| ~ 1e4), so nothing overflows.
  float (*exp2_sum)(float* dst, const float* x, float c, float m, std::int64_t n);
  // x[i] *= s
  void (*scale)(float* x, float s, std::int64_t n);
  // contiguous conversions between a dtype (bf16, fp16, fp32) and fp32
  void (*load)(float* dst, const void* src, DType src_dtype, std::int64_t n);
  void (*store)(void* dst, DType dst_dtype, const float* src, std::int64_t n);
};

const RowKernels& row_kernels(Isa isa);
inline const RowKernels& row_kernels() { return row_kernels(kernel_isa()); }

// e^x over a row (the accuracy test's entry point to the same exp2 the softmaxes use).
void exp_row(float* dst, const float* x, std::int64_t n, Isa isa);

namespace portable {
extern const RowKernels kRowKernels;
}
namespace avx512 {
extern const RowKernels kRowKernels;
}

}  // namespace attnprof::cpu
