#pragma once
// AVX-512 helpers for the kernels compiled with AVX-512 flags (files named *_avx512.cpp).
// Only those files include this header; everything here is inline and used from them alone.
#include <immintrin.h>

#include <cstdint>

#include "cpu/exp2_poly.h"

namespace attnprof::cpu::avx512 {

// 2^x for 16 lanes: roundscale to n, Taylor polynomial in f, vscalefps (exact 2^n, no bit tricks,
// so n far below −126 gives 0 and −inf gives 0). max(kMin, x) keeps NaN (x is the second operand).
inline __m512 exp2(__m512 x) {
  using namespace exp2_poly;
  __m512 xc = _mm512_max_ps(_mm512_set1_ps(kMin), x);
  xc = _mm512_min_ps(_mm512_set1_ps(kMax), xc);
  __m512 n = _mm512_roundscale_ps(xc, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 f = _mm512_sub_ps(xc, n);
  __m512 p = _mm512_set1_ps(kC6);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(kC5));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(kC4));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(kC3));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(kC2));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(kC1));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

inline __mmask16 tail_mask(std::int64_t remaining) {
  return remaining >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << remaining) - 1u);
}

inline __m512 load_bf16(const std::uint16_t* p, __mmask16 m) {
  __m256i h = _mm256_maskz_loadu_epi16(m, p);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
inline __m512 load_fp16(const std::uint16_t* p, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}

// fp32 -> bf16, round to nearest even, NaN kept quiet (matches float_to_bf16 without needing AVX512_BF16).
inline __m256i to_bf16(__m512 x) {
  __m512i w = _mm512_castps_si512(x);
  __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(w, 16), _mm512_set1_epi32(1));
  __m512i rounded = _mm512_add_epi32(w, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
  __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  rounded = _mm512_mask_or_epi32(rounded, nan, w, _mm512_set1_epi32(0x00400000));
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(rounded, 16));
}
inline __m256i to_fp16(__m512 x) { return _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }

// max over x[0..n) (−inf for n == 0), NaN when any element is NaN.
inline float row_max(const float* x, std::int64_t n) {
  const __m512 neg_inf = _mm512_set1_ps(-__builtin_inff());
  __m512 m = neg_inf;
  __mmask16 nan = 0;
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 v = _mm512_loadu_ps(x + i);
    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    m = _mm512_max_ps(m, v);
  }
  if (i < n) {
    __m512 v = _mm512_mask_loadu_ps(neg_inf, tail_mask(n - i), x + i);
    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    m = _mm512_max_ps(m, v);
  }
  return nan ? __builtin_nanf("") : _mm512_reduce_max_ps(m);
}

// dst[i] = 2^((x[i] − m)·c); returns the sum. dst may alias x.
inline float exp2_sum(float* dst, const float* x, float c, float m, std::int64_t n) {
  const __m512 vc = _mm512_set1_ps(c);
  const __m512 vm = _mm512_set1_ps(m);
  __m512 sum = _mm512_setzero_ps();
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 e = exp2(_mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm), vc));
    _mm512_storeu_ps(dst + i, e);
    sum = _mm512_add_ps(sum, e);
  }
  if (i < n) {
    const __mmask16 k = tail_mask(n - i);
    __m512 e = exp2(_mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), vm), vc));
    _mm512_mask_storeu_ps(dst + i, k, e);
    sum = _mm512_add_ps(sum, _mm512_maskz_mov_ps(k, e));
  }
  return _mm512_reduce_add_ps(sum);
}

// dst[i] = 2^((a[i] − b[i])·c)
inline void exp2_diff(float* dst, const float* a, const float* b, float c, std::int64_t n) {
  const __m512 vc = _mm512_set1_ps(c);
  for (std::int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask(n - i);
    const __m512 x = _mm512_sub_ps(_mm512_maskz_loadu_ps(k, a + i), _mm512_maskz_loadu_ps(k, b + i));
    _mm512_mask_storeu_ps(dst + i, k, exp2(_mm512_mul_ps(x, vc)));
  }
}

}  // namespace attnprof::cpu::avx512
