#pragma once
// The bf16 register-blocked micro-kernel (AVX512_BF16), shared by the fused attention and the bf16
// GEMM; included only by files compiled with -mavx512bf16 (internal linkage in each).
//
// C[R][16·NZ] (+)= A[R][K] · B[K][16·NZ], fp32 accumulation: A rows hold bf16 pairs along K (one
// 32-bit broadcast per row and pair), B is packed [K/2][ldb/2][2] so one 64-byte load gives 16
// columns × one pair; vdpbf16ps adds both products of a pair into each fp32 lane. R ≤ 6, NZ ≤ 4:
// 24 zmm accumulators, NZ loads and R broadcasts per pair. row_scale (nullable) multiplies the
// loaded C rows first (the online softmax's rescale); null starts from zero. K must be even.
#include <immintrin.h>

#include <cstdint>

#include "cpu/vec_avx512.h"

namespace attnprof::cpu {
namespace {

template <int R, int NZ>
void tile_bf16(float* c, std::int64_t ldc, const std::uint16_t* a, std::int64_t lda, const std::uint16_t* b,
               std::int64_t ldb, std::int64_t k_count, const float* row_scale) {
  __m512 acc[R][NZ];
  avx512::load_accumulators(acc, c, ldc, row_scale);
  for (std::int64_t k = 0; k < k_count; k += 2) {
    __m512i bv[NZ];
#pragma GCC unroll 4
    for (int z = 0; z < NZ; ++z) bv[z] = _mm512_loadu_si512(b + (k / 2) * ldb + 32 * z);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      std::uint32_t pair;
      __builtin_memcpy(&pair, a + r * lda + k, sizeof pair);
      __m512i av = _mm512_set1_epi32(static_cast<int>(pair));
#pragma GCC unroll 4
      for (int z = 0; z < NZ; ++z) acc[r][z] = _mm512_dpbf16_ps(acc[r][z], (__m512bh)av, (__m512bh)bv[z]);
    }
  }
  avx512::store_accumulators(c, ldc, acc);
}

using TileFn = void (*)(float*, std::int64_t, const std::uint16_t*, std::int64_t, const std::uint16_t*, std::int64_t,
                        std::int64_t, const float*);
#define ATTNPROF_TILE_ROW(R) {&tile_bf16<R, 1>, &tile_bf16<R, 2>, &tile_bf16<R, 3>, &tile_bf16<R, 4>}
const TileFn kTiles[6][4] = {ATTNPROF_TILE_ROW(1), ATTNPROF_TILE_ROW(2), ATTNPROF_TILE_ROW(3),
                             ATTNPROF_TILE_ROW(4), ATTNPROF_TILE_ROW(5), ATTNPROF_TILE_ROW(6)};
#undef ATTNPROF_TILE_ROW

inline void tile_bf16_dispatch(int nr, int nz, float* c, std::int64_t ldc, const std::uint16_t* a, std::int64_t lda,
                               const std::uint16_t* b, std::int64_t ldb, std::int64_t k_count, const float* row_scale) {
  kTiles[nr - 1][nz - 1](c, ldc, a, lda, b, ldb, k_count, row_scale);
}

}  // namespace
}  // namespace attnprof::cpu
