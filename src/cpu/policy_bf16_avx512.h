#pragma once
// The vdpbf16ps micro-kernel Policy of the fused attention's tile driver (attention_tiles.h):
// bf16 Q, K and V packed in bf16 pairs, fp32 scores, bf16 probabilities from the fp32 softmax.
// Shared by attention_avx512_bf16.cpp and attention_amx.cpp (whose Policy replaces only the
// micro-kernel); included only by files compiled with AVX-512 + AVX512_BF16 flags, internal
// linkage in each.
#include <cstdint>
#include <cstring>

#include "cpu/attention_tiles.h"
#include "cpu/microkernel_bf16_avx512.h"
#include "cpu/vec_avx512.h"

namespace attnprof::cpu {
namespace {

// p[i] = bf16(2^((s[i] − m)·c)); returns the fp32 sum of the unrounded values. Two vectors per
// step so one vcvtne2ps2bf16 converts 32 probabilities.
float probs_bf16(std::uint16_t* p, const float* s, float c, float m, std::int64_t n) {
  const __m512 vc = _mm512_set1_ps(c);
  const __m512 vm = _mm512_set1_ps(m);
  __m512 sum0 = _mm512_setzero_ps(), sum1 = _mm512_setzero_ps();
  std::int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 e0 = avx512::exp2(_mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(s + i), vm), vc));
    const __m512 e1 = avx512::exp2(_mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(s + i + 16), vm), vc));
    sum0 = _mm512_add_ps(sum0, e0);
    sum1 = _mm512_add_ps(sum1, e1);
    _mm512_storeu_si512(p + i, (__m512i)_mm512_cvtne2ps_pbh(e1, e0));
  }
  for (; i < n; i += 16) {
    const __mmask16 k = avx512::tail_mask(n - i);
    __m512 e = avx512::exp2(_mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, s + i), vm), vc));
    e = _mm512_maskz_mov_ps(k, e);
    sum0 = _mm512_add_ps(sum0, e);
    _mm256_mask_storeu_epi16(p + i, k, (__m256i)_mm512_cvtneps_pbh(e));
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(sum0, sum1));
}

struct PolicyAvx512Bf16 {
  using Elem = std::uint16_t;
  static constexpr std::int64_t kPair = 2;
  static constexpr bool kProbsAliasScores = false;
  static std::uint16_t from_float(float x) { return float_to_bf16(x).bits; }
  static const RowKernels& rows() { return avx512::kRowKernels; }
  // bf16 K/V with unit-stride rows and even D: K as a transpose of 32-bit pairs, V rows interleaved
  // in pairs, instead of element loops.
  static bool fast_pack(DType dtype) { return dtype == DType::bf16; }
  static void pack_k(std::uint16_t* kt, std::int64_t bcp, const void* k, DType, std::int64_t row_stride,
                     std::int64_t cols, std::int64_t d, std::int64_t tile_elems) {
    std::memset(kt, 0, static_cast<std::size_t>(tile_elems) * sizeof(std::uint16_t));
    avx512::transpose_pack32(reinterpret_cast<std::uint32_t*>(kt), bcp, static_cast<const std::uint32_t*>(k),
                             row_stride / 2, cols, d / 2);
  }
  static void pack_v(std::uint16_t* vt, std::int64_t dv, const void* v, DType, std::int64_t row_stride,
                     std::int64_t cols, std::int64_t d, std::int64_t tile_elems) {
    std::memset(vt, 0, static_cast<std::size_t>(tile_elems) * sizeof(std::uint16_t));
    avx512::interleave_pack_bf16(vt, 2 * dv, static_cast<const std::uint16_t*>(v), row_stride, cols, d);
  }
  static float row_max(const float* s, std::int64_t n) { return avx512::row_max(s, n); }
  static void exp2_diff(float* d, const float* a, const float* b, float c, std::int64_t n) {
    avx512::exp2_diff(d, a, b, c, n);
  }
  static float probs(std::uint16_t* p, const float* s, float c, float m, std::int64_t n) {
    return probs_bf16(p, s, c, m, n);
  }
  static void tile(int nr, int nz, float* c, std::int64_t ldc, const std::uint16_t* a, std::int64_t lda,
                   const std::uint16_t* b, std::int64_t ldb, std::int64_t k_count, const float* row_scale) {
    tile_bf16_dispatch(nr, nz, c, ldc, a, lda, b, ldb, k_count, row_scale);
  }
};

}  // namespace
}  // namespace attnprof::cpu
