// Fused attention, fp32 compute on AVX-512 (fp32 inputs, and bf16/fp16 inputs on CPUs without
// AVX512_BF16: packing converts them to fp32). Compiled with AVX-512 flags; reached only through
// fused_attention() when kernel_isa() allows it. Tiling, FLOPs and bytes: attention_tiles.h.
//
// Micro-kernel: microkernel_fp32_avx512.h, C[R][16·NZ] (+)= A[R][K] · B[K][16·NZ]. One kernel
// serves S = Q·Kᵀ (K = D) and O += P·V (K = keys).
//
// Softmax row max and exp inlined, α for all rows in one vector pass; K packed d-outer with
// vector packing (16×16 transposes, pair interleave); with ≥ 2 heads per thread each thread packs
// its head right before the head's q-blocks.
//
// Speed (Zen 5 development machine, 2 threads, causal, GFLOP/s per CPU-second, D=64 / D=128):
// fp32 414 / 415, 78% of the 2-core FMA peak 528. The earlier versions: docs/history.md.
#include "cpu/attention_tiles.h"
#include "cpu/microkernel_fp32_avx512.h"
#include "cpu/vec_avx512.h"

namespace attnprof::cpu {
namespace {

constexpr std::int64_t kMaxHeadDim = 512;  // cpu_backend.cpp's fused_refusal enforces it

struct PolicyAvx512Fp32 {
  using Elem = float;
  static constexpr std::int64_t kPair = 1;
  static constexpr bool kProbsAliasScores = true;
  static float from_float(float x) { return x; }
  static const RowKernels& rows() { return avx512::kRowKernels; }
  // K/V with unit-stride rows (fp32, or bf16/fp16 converted on the way): vector transposes and
  // row conversions instead of element loops.
  static bool fast_pack(DType dtype) { return dtype == DType::fp32 || dtype == DType::bf16 || dtype == DType::fp16; }
  static void pack_k(float* kt, std::int64_t bcp, const void* k, DType dtype, std::int64_t row_stride,
                     std::int64_t cols, std::int64_t d, std::int64_t tile_elems) {
    std::memset(kt, 0, static_cast<std::size_t>(tile_elems) * sizeof(float));
    auto* dst = reinterpret_cast<std::uint32_t*>(kt);
    if (dtype == DType::fp32) {
      avx512::transpose_pack32(dst, bcp, static_cast<const std::uint32_t*>(k), row_stride, cols, d);
      return;
    }
    alignas(64) float staged[16 * kMaxHeadDim];  // 16 key rows converted to fp32
    const std::int64_t ld = (d + 15) / 16 * 16;
    const std::int64_t esize = 2;
    for (std::int64_t j0 = 0; j0 < cols; j0 += 16) {
      const std::int64_t n = cols - j0 < 16 ? cols - j0 : 16;
      for (std::int64_t i = 0; i < n; ++i) {
        convert_row(staged + i * ld, static_cast<const char*>(k) + (j0 + i) * row_stride * esize, dtype, d);
      }
      avx512::transpose_pack32(dst + j0, bcp, reinterpret_cast<const std::uint32_t*>(staged), ld, n, d);
    }
  }
  static void pack_v(float* vt, std::int64_t dv, const void* v, DType dtype, std::int64_t row_stride,
                     std::int64_t cols, std::int64_t d, std::int64_t tile_elems) {
    std::memset(vt, 0, static_cast<std::size_t>(tile_elems) * sizeof(float));
    const std::int64_t esize = static_cast<std::int64_t>(dtype_size(dtype));
    for (std::int64_t j = 0; j < cols; ++j) {
      convert_row(vt + j * dv, static_cast<const char*>(v) + j * row_stride * esize, dtype, d);
    }
  }
  static float row_max(const float* s, std::int64_t n) { return avx512::row_max(s, n); }
  static void exp2_diff(float* d, const float* a, const float* b, float c, std::int64_t n) {
    avx512::exp2_diff(d, a, b, c, n);
  }
  static float probs(float* p, const float* s, float c, float m, std::int64_t n) { return avx512::exp2_sum(p, s, c, m, n); }
  static void convert_row(float* dst, const void* src, DType dtype, std::int64_t n) {
    if (dtype == DType::fp32) {
      std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
      return;
    }
    const auto* s16 = static_cast<const std::uint16_t*>(src);
    for (std::int64_t i = 0; i < n; i += 16) {
      const __mmask16 m = avx512::tail_mask(n - i);
      _mm512_mask_storeu_ps(dst + i, m, dtype == DType::bf16 ? avx512::load_bf16(s16 + i, m) : avx512::load_fp16(s16 + i, m));
    }
  }
  static void tile(int nr, int nz, float* c, std::int64_t ldc, const float* a, std::int64_t lda, const float* b,
                   std::int64_t ldb, std::int64_t k_count, const float* row_scale) {
    tile_fp32_any(false, nr, nz, c, ldc, a, lda, b, ldb, k_count, row_scale);
  }
};

}  // namespace

namespace detail {
void fused_attention_avx512_fp32(const FusedProblem& p, const TileConfig& c, void* prepack, void* scratch,
                                 int threads) {
  TileDriver<PolicyAvx512Fp32>(p, c, threads).run(prepack, scratch, threads);
}
}  // namespace detail

}  // namespace attnprof::cpu
