#pragma once
// Batched GEMM on the CPU: dst[b,h] = alpha · a[b,h] · op(bm[b, h / (H/Hb)]).
// bf16 operands on a CPU with AVX512_BF16 run our vdpbf16ps kernel (gemm_bf16_avx512.cpp);
// fp32 operands with a unit stride go straight to OpenBLAS sgemm; other bf16/fp16 (and fp32 with no unit
// stride) are converted per (b, h) into fp32 panels in per-thread scratch (A and the result
// 256 rows at a time), multiplied by sgemm
// (fp32 accumulation), and the result converted into dst. Parallel over B·H with OpenMP, OpenBLAS
// single-threaded inside (gemm.cpp names the two threading traps; openblas.cpp handles them).
#include <attnprof/tensor.h>

namespace attnprof::cpu {

// Checks the shapes; throws Error naming them when they do not fit.
void batched_gemm(Tensor& dst, const Tensor& a, const Tensor& bm, bool transpose_b, float alpha);

// The kernel name for what batched_gemm will run on these operands ("cpu::gemm_fp32_openblas",
// "cpu::gemm_bf16_avx512bf16", ...).
const char* gemm_kernel_name(const Tensor& dst, const Tensor& a, const Tensor& bm, bool transpose_b);

}  // namespace attnprof::cpu
