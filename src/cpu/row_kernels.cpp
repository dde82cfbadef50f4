#include "cpu/row_kernels.h"

#include "cpu/exp2_poly.h"

namespace attnprof::cpu {

const RowKernels& row_kernels(Isa isa) {
  return isa == Isa::portable ? portable::kRowKernels : avx512::kRowKernels;
}

void exp_row(float* dst, const float* x, std::int64_t n, Isa isa) {
  row_kernels(isa).exp2_sum(dst, x, exp2_poly::kLog2e, 0.0f, n);
}

}  // namespace attnprof::cpu
