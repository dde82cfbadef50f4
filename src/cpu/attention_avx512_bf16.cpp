// Fused attention for bf16 inputs on CPUs with AVX512_BF16: both GEMMs on vdpbf16ps, which sums
// a pair of bf16 products into each fp32 lane (2× the fp32 FMA rate on Zen 4). Q and K stay bf16;
// P is rounded to bf16 for the PV product while the row sums use the unrounded fp32 values, and
// m, l and O are fp32 throughout (as PyTorch's CPU flash kernel does). Compiled with AVX-512 and
// AVX512_BF16 flags. Tiling, FLOPs and bytes: attention_tiles.h.
//
// Micro-kernel: C[R][16·NZ] (+)= A[R][K] · B[K][16·NZ] with A rows as bf16 pairs (one 32-bit
// broadcast per row and pair) and B packed [K/2][16·NZ][2]; R ≤ 6, NZ ≤ 4.
//
// Versions (Zen 5 dev machine, 1 thread, causal, GFLOP/s per CPU-second, D=64 / D=128;
// 2-thread numbers in bench/RESULTS.md):
//   v1 Br=Bc=128, 6×64 register block, prepacked K/V, heaviest-first dynamic schedule:
//      fp32 186 / 174, bf16 300 / 300.
//   v2 softmax row max/exp inlined, α for all rows in one vector pass, K packed d-outer,
//      Br=64 × Bc=256: fp32 216 / 186, bf16 359 / 327 (peak of one core: fp32 FMA 278,
//      vdpbf16ps 513).
#include "cpu/attention_tiles.h"
#include "cpu/vec_avx512.h"

namespace attnprof::cpu {
namespace {

template <int R, int NZ>
void tile_bf16(float* c, std::int64_t ldc, const std::uint16_t* a, std::int64_t lda, const std::uint16_t* b,
               std::int64_t ldb, std::int64_t k_count, const float* row_scale) {
  __m512 acc[R][NZ];
  if (row_scale != nullptr) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      __m512 sc = _mm512_set1_ps(row_scale[r]);
#pragma GCC unroll 4
      for (int z = 0; z < NZ; ++z) acc[r][z] = _mm512_mul_ps(_mm512_loadu_ps(c + r * ldc + 16 * z), sc);
    }
  } else {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int z = 0; z < NZ; ++z) acc[r][z] = _mm512_setzero_ps();
  }
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
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int z = 0; z < NZ; ++z) _mm512_storeu_ps(c + r * ldc + 16 * z, acc[r][z]);
}

using TileFn = void (*)(float*, std::int64_t, const std::uint16_t*, std::int64_t, const std::uint16_t*, std::int64_t,
                        std::int64_t, const float*);
#define ATTNPROF_TILE_ROW(R) {&tile_bf16<R, 1>, &tile_bf16<R, 2>, &tile_bf16<R, 3>, &tile_bf16<R, 4>}
const TileFn kTiles[6][4] = {ATTNPROF_TILE_ROW(1), ATTNPROF_TILE_ROW(2), ATTNPROF_TILE_ROW(3),
                             ATTNPROF_TILE_ROW(4), ATTNPROF_TILE_ROW(5), ATTNPROF_TILE_ROW(6)};
#undef ATTNPROF_TILE_ROW

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
    kTiles[nr - 1][nz - 1](c, ldc, a, lda, b, ldb, k_count, row_scale);
  }
};

}  // namespace

namespace detail {
void fused_attention_avx512_bf16(const FusedProblem& p, const TileConfig& c, void* prepack, void* scratch,
                                 int threads) {
  TileDriver<PolicyAvx512Bf16>(p, c).run(prepack, scratch, threads);
}
FusedWorkspace workspace_bf16(const FusedProblem& p, const TileConfig& c) {
  return TileDriver<PolicyAvx512Bf16>(p, c).workspace();
}
}  // namespace detail

}  // namespace attnprof::cpu
