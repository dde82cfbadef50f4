// Fused attention with portable loops (any x86-64; used when AVX-512 is missing or
// --cpu-isa portable). fp32 compute; bf16/fp16 inputs converted while packing.
// Same tiling as the AVX-512 builds (attention_tiles.h); the micro-kernel (microkernel_portable.h)
// is a plain loop over a row of up to 64 accumulators that GCC vectorises at the baseline ISA.
#include "cpu/attention_tiles.h"
#include "cpu/microkernel_portable.h"

namespace attnprof::cpu {
namespace {

struct PolicyPortable {
  using Elem = float;
  static constexpr std::int64_t kPair = 1;
  static constexpr bool kProbsAliasScores = true;
  static float from_float(float x) { return x; }
  static bool fast_pack(DType) { return false; }  // element loops only
  static void pack_k(float*, std::int64_t, const void*, DType, std::int64_t, std::int64_t, std::int64_t, std::int64_t) {}
  static void pack_v(float*, std::int64_t, const void*, DType, std::int64_t, std::int64_t, std::int64_t, std::int64_t) {}
  static const RowKernels& rows() { return portable::kRowKernels; }
  static float row_max(const float* s, std::int64_t n) { return portable::kRowKernels.max(s, n); }
  static void exp2_diff(float* d, const float* a, const float* b, float c, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) d[i] = exp2_poly::exp2_portable((a[i] - b[i]) * c);
  }
  static float probs(float* p, const float* s, float c, float m, std::int64_t n) {
    return portable::kRowKernels.exp2_sum(p, s, c, m, n);
  }
  static void tile(int nr, int nz, float* c, std::int64_t ldc, const float* a, std::int64_t lda, const float* b,
                   std::int64_t ldb, std::int64_t k_count, const float* row_scale) {
    tile_portable(false, nr, nz, c, ldc, a, lda, b, ldb, k_count, row_scale);
  }
};

}  // namespace

namespace detail {
void fused_attention_portable(const FusedProblem& p, const TileConfig& c, void* prepack, void* scratch, int threads) {
  TileDriver<PolicyPortable>(p, c, threads).run(prepack, scratch, threads);
}
// The AVX-512 fp32 build has this layout too (float packs, probabilities over the scores); computed
// here so sizing never runs code compiled for AVX-512.
FusedWorkspace workspace_fp32(const FusedProblem& p, const TileConfig& c, int threads) {
  return TileDriver<PolicyPortable>(p, c, threads).workspace();
}
}  // namespace detail

}  // namespace attnprof::cpu
