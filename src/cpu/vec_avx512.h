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

// A register tile's accumulators, C[R][16·NZ] with row pitch ldc: loaded with each row scaled by
// row_scale[r] (the online softmax's rescale of O), or zero when row_scale is null; and stored back.
template <int R, int NZ>
__attribute__((always_inline)) inline void load_accumulators(__m512 (&acc)[R][NZ], const float* c, std::int64_t ldc, const float* row_scale) {
  if (row_scale != nullptr) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 scale = _mm512_set1_ps(row_scale[r]);
#pragma GCC unroll 4
      for (int z = 0; z < NZ; ++z) acc[r][z] = _mm512_mul_ps(_mm512_loadu_ps(c + r * ldc + 16 * z), scale);
    }
  } else {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int z = 0; z < NZ; ++z) acc[r][z] = _mm512_setzero_ps();
  }
}

template <int R, int NZ>
__attribute__((always_inline)) inline void store_accumulators(float* c, std::int64_t ldc, const __m512 (&acc)[R][NZ]) {
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int z = 0; z < NZ; ++z) _mm512_storeu_ps(c + r * ldc + 16 * z, acc[r][z]);
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

// In-register transpose of a 16×16 block of 32-bit words: r[i] holds row i, afterwards r[c] holds
// column c. 64 shuffles: unpack 32-bit pairs, unpack 64-bit pairs, then two rounds of 128-bit
// lane shuffles.
inline void transpose16x16(__m512i r[16]) {
  __m512i t[16], u[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {  // u[4i + c], lane L: rows 4i..4i+3 of column 4L + c
    u[4 * i + 0] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int c = 0; c < 4; ++c) {
    const __m512i x0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x44);
    const __m512i x1 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xee);
    const __m512i x2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x44);
    const __m512i x3 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xee);
    r[c] = _mm512_shuffle_i32x4(x0, x2, 0x88);
    r[4 + c] = _mm512_shuffle_i32x4(x0, x2, 0xdd);
    r[8 + c] = _mm512_shuffle_i32x4(x1, x3, 0x88);
    r[12 + c] = _mm512_shuffle_i32x4(x1, x3, 0xdd);
  }
}

// dst[w·ld_dst + j] = src[j·src_stride + w] for j < rows, w < words (32-bit words: fp32 values or
// bf16 pairs); dst's j runs in whole 16-wide blocks (rows past `rows` get zeros).
inline void transpose_pack32(std::uint32_t* dst, std::int64_t ld_dst, const std::uint32_t* src, std::int64_t src_stride,
                             std::int64_t rows, std::int64_t words) {
  __m512i r[16];
  for (std::int64_t j0 = 0; j0 < rows; j0 += 16) {
    for (std::int64_t w0 = 0; w0 < words; w0 += 16) {
      const __mmask16 k = tail_mask(words - w0);
      for (int i = 0; i < 16; ++i) {
        r[i] = j0 + i < rows ? _mm512_maskz_loadu_epi32(k, src + (j0 + i) * src_stride + w0) : _mm512_setzero_si512();
      }
      transpose16x16(r);
      const std::int64_t n = words - w0 < 16 ? words - w0 : 16;
      for (std::int64_t c = 0; c < n; ++c) _mm512_storeu_si512(dst + (w0 + c) * ld_dst + j0, r[c]);
    }
  }
}

// Pairs of bf16 rows interleaved: dst[(j/2)·ld_dst + 2d + j%2] = src[j·src_stride + d] for j < rows,
// d < cols (ld_dst = 2·padded cols, a multiple of 32; odd rows pair with zeros).
inline void interleave_pack_bf16(std::uint16_t* dst, std::int64_t ld_dst, const std::uint16_t* src,
                                 std::int64_t src_stride, std::int64_t rows, std::int64_t cols) {
  alignas(64) static const std::uint16_t kLow[32] = {0, 32, 1, 33, 2, 34, 3, 35, 4, 36, 5, 37, 6, 38, 7, 39,
                                                     8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  alignas(64) static const std::uint16_t kHigh[32] = {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53, 22, 54, 23, 55,
                                                      24, 56, 25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
  const __m512i low = _mm512_load_si512(kLow), high = _mm512_load_si512(kHigh);
  for (std::int64_t j = 0; j < rows; j += 2) {
    std::uint16_t* out = dst + (j / 2) * ld_dst;
    for (std::int64_t d0 = 0; d0 < cols; d0 += 32) {
      const std::int64_t left = cols - d0;
      const __mmask32 k = left >= 32 ? 0xffffffffu : ((1u << left) - 1u);
      const __m512i a = _mm512_maskz_loadu_epi16(k, src + j * src_stride + d0);
      const __m512i b = j + 1 < rows ? _mm512_maskz_loadu_epi16(k, src + (j + 1) * src_stride + d0) : _mm512_setzero_si512();
      _mm512_storeu_si512(out + 2 * d0, _mm512_permutex2var_epi16(a, low, b));
      if (left > 16) _mm512_storeu_si512(out + 2 * d0 + 32, _mm512_permutex2var_epi16(a, high, b));
    }
  }
}

}  // namespace attnprof::cpu::avx512
