// Fused attention for bf16 inputs on CPUs with AVX512_BF16: both GEMMs on vdpbf16ps, which sums
// a pair of bf16 products into each fp32 lane (2× the fp32 FMA rate on Zen 4 and Zen 5). Q and K stay bf16;
// P is rounded to bf16 for the PV product while the row sums use the unrounded fp32 values, and
// m, l and O are fp32 throughout (as PyTorch's CPU flash kernel does). Compiled with AVX-512 and
// AVX512_BF16 flags. Tiling, FLOPs and bytes: attention_tiles.h.
//
// Micro-kernel: microkernel_bf16_avx512.h (shared with the bf16 GEMM).
//
// Versions (Zen 5 dev machine, 1 thread, causal, GFLOP/s per CPU-second, D=64 / D=128;
// 2-thread numbers in bench/RESULTS.md):
//   v1 Br=Bc=128, 6×64 register block, prepacked K/V, heaviest-first dynamic schedule:
//      fp32 186 / 174, bf16 300 / 300.
//   v2 softmax row max/exp inlined, α for all rows in one vector pass, K packed d-outer,
//      Br=64 × Bc=256: fp32 216 / 186, bf16 359 / 327 (peak of one core: fp32 FMA 278,
//      vdpbf16ps 513).
//   v3 vector K/V packing (16×16 transposes, pair interleave); with ≥ 2 heads per thread each
//      thread packs its head right before the head's q-blocks. 2 threads, per CPU-second:
//      fp32 414 / 415, bf16 729 / 773 (78% / 73–78% of the 2-core peaks 528 / 993).
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

namespace detail {
void fused_attention_avx512_bf16(const FusedProblem& p, const TileConfig& c, void* prepack, void* scratch,
                                 int threads) {
  TileDriver<PolicyAvx512Bf16>(p, c, threads).run(prepack, scratch, threads);
}
FusedWorkspace workspace_bf16(const FusedProblem& p, const TileConfig& c, int threads) {
  return TileDriver<PolicyAvx512Bf16>(p, c, threads).workspace();
}
}  // namespace detail

}  // namespace attnprof::cpu
