#pragma once
// The portable micro-kernel (plain loops GCC vectorises at the baseline ISA), shared by the fused
// attention's forward (attention_portable.cpp) and backward (attention_backward_portable.cpp);
// internal linkage in each.
//
// C[nr][16·nz] (+)= A[nr][K] · B[K][16·nz], nr ≤ 6, nz ≤ 4: a row of up to 64 accumulators at a
// time. A is read row-major (a[r·lda + k]) or, with trans_a, column-major (a[k·lda + r]).
// row_scale (nullable) multiplies the loaded C rows first; null starts from zero.
#include <cstdint>

namespace attnprof::cpu {
namespace {

inline void tile_portable(bool trans_a, int nr, int nz, float* c, std::int64_t ldc, const float* a, std::int64_t lda,
                          const float* b, std::int64_t ldb, std::int64_t k_count, const float* row_scale) {
  const int width = 16 * nz;
  const std::int64_t a_row = trans_a ? 1 : lda, a_k = trans_a ? lda : 1;
  for (int r = 0; r < nr; ++r) {
    float acc[64];
    const float sc = row_scale != nullptr ? row_scale[r] : 0.0f;
    for (int j = 0; j < width; ++j) acc[j] = row_scale != nullptr ? c[r * ldc + j] * sc : 0.0f;
    for (std::int64_t k = 0; k < k_count; ++k) {
      const float av = a[r * a_row + k * a_k];
      const float* brow = b + k * ldb;
      for (int j = 0; j < width; ++j) acc[j] += av * brow[j];
    }
    for (int j = 0; j < width; ++j) c[r * ldc + j] = acc[j];
  }
}

}  // namespace
}  // namespace attnprof::cpu
