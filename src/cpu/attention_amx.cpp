// Fused attention for bf16 inputs on CPUs with AMX (AMX-TILE + AMX-BF16, Sapphire Rapids and
// later): S = Q·Kᵀ and O += P·V on the tile registers (tdpbf16ps, 16·16·32 multiply-adds per
// instruction), the online softmax on the stored fp32 score tile with the AVX-512 exp2 of the
// vdpbf16ps path. Compiled with AVX-512, AVX512_BF16, AMX-TILE and AMX-BF16 flags; reached only
// through fused_attention() when kernel_isa() is avx512_amx, which needs CPUID's AMX bits and the
// Linux permission for the tile state (amx.cpp).
//
// Tiling (driver: attention_tiles.h; Policy: policy_amx.h; micro-kernel: microkernel_amx.h):
//   per work item (b, h, Br = 64 query rows): Q packed [Br][Dk], Dk = D rounded up to 32;
//   per key tile of Bc keys (flash 256, efficient 64), up to the causal limit:
//     S[Br][Bc] = Q·Kᵀ in 32 × 32 blocks of 2 × 2 C tiles (A: 16 Q rows × 32 of D, B: Kᵀ panel
//       16 pair-rows × 16 keys × 2, 64-byte rows); blocks wholly past the diagonal skipped;
//     softmax rows with AVX-512 while S is in L1; P rounded to bf16, zero past the visible keys
//       up to the next 32;
//     O[Br][Dv] = α·O + P·V in 32 × 32 blocks: α applied to O in memory (rows with α ≠ 1 only),
//       C reloaded into tiles, Bc/32 tdpbf16ps steps, C stored.
//
// FLOPs: 4·Sq·Sk·D per head (causal: about half, plus the diagonal blocks' masked half), with
// Dk = round_up(D, 32) for Q·Kᵀ (D = 80 computes 96). Bytes: q, k, v read once per pass over
// the head, K/V packed once per head (flash) or per q-block (efficient), out written once; tile
// traffic per key tile: S stored once (Br·Bc·4), O loaded and stored once per 32 × 32 block.
//
// Speed (16-core Xeon of the H200 machine, causal bf16, flash, GFLOP/s; PyTorch's CPU SDPA beside
// it in bench/cpu_vs_pytorch.py): 2 threads 389 / 383 / 611 at 1×16×1024×64 / 1×16×4096×64 /
// 1×16×2048×128, 16 threads 2141 / 2677 / 2646; 1.13–2.43× PyTorch's CPU flash attention.
#include <immintrin.h>

#include "cpu/amx.h"
#include "cpu/policy_amx.h"

namespace attnprof::cpu {
namespace {

// The tile instructions. GCC's intrinsics paste the register number into the assembly text, so
// each register gets its own specialisation (a template parameter would paste the letter "T").
struct HardwareTiles {
  template <int T>
  static void load(const void* base, std::int64_t stride);
  template <int T>
  static void store(void* base, std::int64_t stride);
  template <int T>
  static void zero();
  template <int C, int A, int B>
  static void dot();
  static void configure(const TilePalette& palette) {
    compiler_memory_barrier();
    _tile_loadconfig(&palette);
  }
  static void release() { _tile_release(); }
};

#define ATTNPROF_AMX_TILE_REGISTER(T)                                                                       \
  template <>                                                                                               \
  inline void HardwareTiles::load<T>(const void* base, std::int64_t stride) { _tile_loadd(T, base, stride); } \
  template <>                                                                                               \
  inline void HardwareTiles::store<T>(void* base, std::int64_t stride) { _tile_stored(T, base, stride); }     \
  template <>                                                                                               \
  inline void HardwareTiles::zero<T>() { _tile_zero(T); }
ATTNPROF_AMX_TILE_REGISTER(0)
ATTNPROF_AMX_TILE_REGISTER(1)
ATTNPROF_AMX_TILE_REGISTER(2)
ATTNPROF_AMX_TILE_REGISTER(3)
ATTNPROF_AMX_TILE_REGISTER(4)
ATTNPROF_AMX_TILE_REGISTER(5)
ATTNPROF_AMX_TILE_REGISTER(6)
ATTNPROF_AMX_TILE_REGISTER(7)
#undef ATTNPROF_AMX_TILE_REGISTER

#define ATTNPROF_AMX_DOT(C, A, B) \
  template <>                     \
  inline void HardwareTiles::dot<C, A, B>() { _tile_dpbf16ps(C, A, B); }
ATTNPROF_AMX_DOT(0, 4, 6)
ATTNPROF_AMX_DOT(1, 4, 7)
ATTNPROF_AMX_DOT(2, 5, 6)
ATTNPROF_AMX_DOT(3, 5, 7)
#undef ATTNPROF_AMX_DOT

using PolicyAmx = PolicyAmxBf16<HardwareTiles>;

void require_amx_tiles(const TileConfig& c) {
  if (!amx_tiles_fit(c)) amx::throw_untileable(c.block_q, c.block_k);
}

}  // namespace

namespace detail {
void fused_attention_amx(const FusedProblem& p, const TileConfig& c, void* prepack, void* scratch, int threads) {
  require_amx_tiles(c);
  TileDriver<PolicyAmx>(p, c, threads).run(prepack, scratch, threads);
}
FusedWorkspace workspace_amx(const FusedProblem& p, const TileConfig& c, int threads) {
  require_amx_tiles(c);
  return TileDriver<PolicyAmx>(p, c, threads).workspace();
}
}  // namespace detail

}  // namespace attnprof::cpu
