// bf16 GEMM on vdpbf16ps for CPUs with AVX512_BF16 (compiled with AVX-512 + AVX512_BF16 flags;
// reached from batched_gemm only when kernel_isa() allows it). One (b, h) matrix product:
//   pack B once as [K/2][N'][2] bf16 pairs (N' = N rounded up to 16): a 32-bit transpose when B is
//   given as [N][K] (q·kᵀ), pairs of rows interleaved when it is [K][N] (p·v);
//   then for each 64-column chunk of B (kept in L2) and each 6-row block of A: the shared
//   micro-kernel into a 6×64 fp32 staging tile, scaled by alpha and rounded into C.
// FLOPs 2·M·N·K; bytes: A read N/64 times (from cache for the attention shapes), B packed once,
// C written once. Versus converting to fp32 and calling OpenBLAS sgemm (Haswell kernels on the
// Zen 5 development machine), the naive variant's bf16 GEMMs run several times faster.
#include <cstring>

#include "cpu/gemm_bf16.h"
#include "cpu/microkernel_bf16_avx512.h"
#include "cpu/vec_avx512.h"

namespace attnprof::cpu::detail {

void gemm_bf16_avx512(const Bf16Gemm& g, std::uint16_t* b_pack, float* staging) {
  const std::int64_t np = (g.n + 15) / 16 * 16;
  const std::int64_t ldb = 2 * np;  // elements per packed pair-row
  std::memset(b_pack, 0, static_cast<std::size_t>(g.k * np) * sizeof(std::uint16_t));
  if (g.b_rows_are_n) {
    avx512::transpose_pack32(reinterpret_cast<std::uint32_t*>(b_pack), np, reinterpret_cast<const std::uint32_t*>(g.b),
                             g.ldb / 2, g.n, g.k / 2);
  } else {
    avx512::interleave_pack_bf16(b_pack, ldb, g.b, g.ldb, g.k, g.n);
  }
  const __m512 alpha = _mm512_set1_ps(g.alpha);
  for (std::int64_t c0 = 0; c0 < np; c0 += 64) {
    const int nz = static_cast<int>((np - c0 < 64 ? np - c0 : 64) / 16);
    const std::int64_t width = g.n - c0 < 64 ? g.n - c0 : 64;
    for (std::int64_t r0 = 0; r0 < g.m; r0 += 6) {
      const int nr = static_cast<int>(g.m - r0 < 6 ? g.m - r0 : 6);
      tile_bf16_dispatch(nr, nz, staging, 64, g.a + r0 * g.lda, g.lda, b_pack + 2 * c0, ldb, g.k, nullptr);
      for (int r = 0; r < nr; ++r) {
        char* row = static_cast<char*>(g.c) + ((r0 + r) * g.ldc + c0) * (g.c_is_fp32 ? 4 : 2);
        for (std::int64_t j = 0; j < width; j += 16) {
          const __mmask16 k = avx512::tail_mask(width - j);
          const __m512 v = _mm512_mul_ps(_mm512_loadu_ps(staging + r * 64 + j), alpha);
          if (g.c_is_fp32) {
            _mm512_mask_storeu_ps(reinterpret_cast<float*>(row) + j, k, v);
          } else {
            _mm256_mask_storeu_epi16(reinterpret_cast<std::uint16_t*>(row) + j, k, avx512::to_bf16(v));
          }
        }
      }
    }
  }
}

}  // namespace attnprof::cpu::detail
