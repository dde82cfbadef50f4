#pragma once
// The fp32 register-blocked micro-kernel (AVX-512 FMA), shared by the fused attention's forward
// (attention_avx512.cpp) and backward (attention_backward_avx512.cpp); included only by files
// compiled with AVX-512 flags (internal linkage in each).
//
// C[R][16·NZ] (+)= A[R][K] · B[K][16·NZ], R ≤ 6, NZ ≤ 4: 24 zmm accumulators, NZ loads and R
// broadcasts per k step. A is read row-major (A[r][k] = a[r·lda + k]) or, with trans_a, column-major
// (A[r][k] = a[k·lda + r]: the backward's Pᵀ·dO and dSᵀ·Q read P and dS as stored, no transpose
// pass). row_scale (nullable) multiplies the loaded C rows first; null starts from zero.
#include <immintrin.h>

#include <cstdint>

#include "cpu/vec_avx512.h"

namespace attnprof::cpu {
namespace {

template <int R, int NZ, bool kTransA>
void tile_fp32(float* c, std::int64_t ldc, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
               std::int64_t k_count, const float* row_scale) {
  __m512 acc[R][NZ];
  avx512::load_accumulators(acc, c, ldc, row_scale);
  for (std::int64_t k = 0; k < k_count; ++k) {
    __m512 bv[NZ];
#pragma GCC unroll 4
    for (int z = 0; z < NZ; ++z) bv[z] = _mm512_loadu_ps(b + k * ldb + 16 * z);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      __m512 av = _mm512_set1_ps(kTransA ? a[k * lda + r] : a[r * lda + k]);
#pragma GCC unroll 4
      for (int z = 0; z < NZ; ++z) acc[r][z] = _mm512_fmadd_ps(av, bv[z], acc[r][z]);
    }
  }
  avx512::store_accumulators(c, ldc, acc);
}

using TileFp32Fn = void (*)(float*, std::int64_t, const float*, std::int64_t, const float*, std::int64_t, std::int64_t,
                            const float*);
#define ATTNPROF_TILE_ROW(R, T) \
  {&tile_fp32<R, 1, T>, &tile_fp32<R, 2, T>, &tile_fp32<R, 3, T>, &tile_fp32<R, 4, T>}
#define ATTNPROF_TILE_TABLE(T)                                                                         \
  {ATTNPROF_TILE_ROW(1, T), ATTNPROF_TILE_ROW(2, T), ATTNPROF_TILE_ROW(3, T), ATTNPROF_TILE_ROW(4, T), \
   ATTNPROF_TILE_ROW(5, T), ATTNPROF_TILE_ROW(6, T)}
const TileFp32Fn kTilesFp32[2][6][4] = {ATTNPROF_TILE_TABLE(false), ATTNPROF_TILE_TABLE(true)};
#undef ATTNPROF_TILE_TABLE
#undef ATTNPROF_TILE_ROW

// nr rows (1..6) × 16·nz columns (nz 1..4).
inline void tile_fp32_any(bool trans_a, int nr, int nz, float* c, std::int64_t ldc, const float* a, std::int64_t lda,
                          const float* b, std::int64_t ldb, std::int64_t k_count, const float* row_scale) {
  kTilesFp32[trans_a ? 1 : 0][nr - 1][nz - 1](c, ldc, a, lda, b, ldb, k_count, row_scale);
}

}  // namespace
}  // namespace attnprof::cpu
