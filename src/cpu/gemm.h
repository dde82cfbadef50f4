#pragma once
// Batched GEMM on the CPU: dst[b,h] = alpha · a[b,h] · op(bm[b, h / (H/Hb)]).
// bf16 operands on a CPU with AVX512_BF16 run our vdpbf16ps kernel (gemm_bf16_avx512.cpp);
// fp32 operands with a unit stride go straight to OpenBLAS sgemm; other bf16/fp16 (and fp32 with no unit
// stride) are converted per (b, h) into fp32 panels in per-thread scratch (A and the result
// 256 rows at a time), multiplied by sgemm
// (fp32 accumulation), and the result converted into dst. Parallel over B·H with OpenMP, OpenBLAS
// single-threaded inside (see openblas_init in gemm.cpp for the two threading traps).
#include <attnprof/tensor.h>

#include <string>

namespace attnprof::cpu {

// Checks the shapes; throws Error naming them when they do not fit.
void batched_gemm(Tensor& dst, const Tensor& a, const Tensor& bm, bool transpose_b, float alpha);

// The kernel name for what batched_gemm will run on these operands ("cpu::gemm_fp32_openblas",
// "cpu::gemm_bf16_avx512bf16", ...).
const char* gemm_kernel_name(const Tensor& dst, const Tensor& a, const Tensor& bm, bool transpose_b);

// Applies the OpenBLAS threading settings once (see gemm.cpp); the backend calls it at start-up so
// OpenBLAS's own thread pool never competes with our OpenMP threads.
void openblas_init();

// OpenBLAS's build ("OpenBLAS 0.3.21 ... Cooperlake MAX_THREADS=64") and threading model.
std::string openblas_description();

}  // namespace attnprof::cpu
