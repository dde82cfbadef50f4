// AVX-512 row kernels (this file is compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma
// and only reached when kernel_isa() says the CPU has them).
#include <attnprof/dtype.h>

#include <cstring>

#include "cpu/row_kernels.h"
#include "cpu/vec_avx512.h"

namespace attnprof::cpu::avx512 {
namespace {

void scale(float* x, float s, std::int64_t n) {
  __m512 vs = _mm512_set1_ps(s);
  for (std::int64_t i = 0; i < n; i += 16) {
    __mmask16 k = tail_mask(n - i);
    _mm512_mask_storeu_ps(x + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + i), vs));
  }
}

void load(float* dst, const void* src, DType dtype, std::int64_t n) {
  const auto* s16 = static_cast<const std::uint16_t*>(src);
  switch (dtype) {
    case DType::fp32: std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float)); return;
    case DType::bf16:
      for (std::int64_t i = 0; i < n; i += 16) {
        __mmask16 k = tail_mask(n - i);
        _mm512_mask_storeu_ps(dst + i, k, load_bf16(s16 + i, k));
      }
      return;
    case DType::fp16:
      for (std::int64_t i = 0; i < n; i += 16) {
        __mmask16 k = tail_mask(n - i);
        _mm512_mask_storeu_ps(dst + i, k, load_fp16(s16 + i, k));
      }
      return;
    default: return;
  }
}

void store(void* dst, DType dtype, const float* src, std::int64_t n) {
  auto* d16 = static_cast<std::uint16_t*>(dst);
  switch (dtype) {
    case DType::fp32: std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float)); return;
    case DType::bf16:
      for (std::int64_t i = 0; i < n; i += 16) {
        __mmask16 k = tail_mask(n - i);
        _mm256_mask_storeu_epi16(d16 + i, k, to_bf16(_mm512_maskz_loadu_ps(k, src + i)));
      }
      return;
    case DType::fp16:
      for (std::int64_t i = 0; i < n; i += 16) {
        __mmask16 k = tail_mask(n - i);
        _mm256_mask_storeu_epi16(d16 + i, k, to_fp16(_mm512_maskz_loadu_ps(k, src + i)));
      }
      return;
    default: return;
  }
}

}  // namespace

const RowKernels kRowKernels{avx512::row_max, avx512::exp2_sum, scale, load, store};

}  // namespace attnprof::cpu::avx512
