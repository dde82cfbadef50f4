#pragma once
// The AMX micro-kernel Policy of the fused attention's tile driver (attention_tiles.h): the bf16
// Policy (policy_bf16_avx512.h: packing, AVX-512 softmax, bf16 probabilities) with both products
// on the tile registers (microkernel_amx.h). Templated on the Tiles backend so the emulated tiles
// of the tests run the same code. Included only by files compiled with AVX-512 + AVX512_BF16 flags.
//
// Shapes the driver sees: micro-tiles of 32 rows × 32 columns (2 × 2 C tiles), reductions padded
// to 32 (Q and the Kᵀ panel to Dk = D rounded up to 32 with zeros, P and the V panel to a multiple
// of 32 keys with zeros), so every tdpbf16ps runs whole. The driver's block sizes must be
// multiples of 32 (Br: a micro-tile's rows past the block's last row are computed on scratch rows
// that are never read; Bc: P's zero padding stays inside its row).
//
// O (fp32, [Br][Dv] in L1/L2) accumulates in memory: each P·V micro-tile first multiplies its C
// rows by the online softmax's α with AVX-512, skipping rows whose α is exactly 1 (the running max
// did not move: after the first key tiles, most rows), then loads C into tile registers, runs the
// keys and stores C. The alternative, P·V of each key tile into fresh tiles and O = α·O + C with
// AVX-512, always pays that extra pass (two loads, a multiply-add and a store per element of O);
// reloading C costs one tile load per 16 × 16 and amortises over Bc/32 tdpbf16ps steps.
#include <immintrin.h>

#include <cstdint>

#include "cpu/microkernel_amx.h"
#include "cpu/policy_bf16_avx512.h"

namespace attnprof::cpu {
namespace {

// c[r][0..cols) *= row_scale[r] for r < nr; rows with a factor of exactly 1 are left alone (a NaN
// factor is not 1, so NaN still spreads).
inline void rescale_rows(float* c, std::int64_t ldc, int nr, int cols, const float* row_scale) {
  for (int r = 0; r < nr; ++r) {
    const float s = row_scale[r];
    if (s == 1.0f) continue;
    const __m512 vs = _mm512_set1_ps(s);
    float* row = c + r * ldc;
    for (int j = 0; j < cols; j += 16) _mm512_storeu_ps(row + j, _mm512_mul_ps(_mm512_loadu_ps(row + j), vs));
  }
}

template <class Tiles>
struct PolicyAmxBf16 : PolicyAvx512Bf16 {
  static constexpr std::int64_t kMicroRows = 2 * kTileRows;
  static constexpr std::int64_t kMicroCols = 2 * kTileFp32Cols;
  static constexpr std::int64_t kReduceAlign = kTileBf16K;

  // Tile configuration is per thread (and zeroes the tiles); loaded on every thread of the
  // driver's parallel region before its first tile instruction, released after its last one so
  // the kernel does not keep the 8 KiB tile state live (XSAVE cost at each context switch).
  static void begin_thread() {
    // A constant object: GCC 12's _tile_loadconfig declares only 8 of the 64 bytes it reads, so
    // the stores building a stack copy could be dropped as dead.
    static constexpr TilePalette kPalette = attention_palette();
    Tiles::configure(kPalette);
  }
  static void end_thread() { Tiles::release(); }

  // The driver's micro-tile call (same contract as PolicyAvx512Bf16::tile): nr ≤ 32 rows, nz ≤ 2
  // groups of 16 columns, k_count a multiple of 32.
  static void tile(int nr, int nz, float* c, std::int64_t ldc, const std::uint16_t* a, std::int64_t lda,
                   const std::uint16_t* b, std::int64_t ldb, std::int64_t k_count, const float* row_scale) {
    if (row_scale != nullptr) {
      rescale_rows(c, ldc, nr, kTileFp32Cols * nz, row_scale);
      if (k_count == 0) return;  // no visible key for these rows in this tile: only the rescale
    }
    using BlockFn = void (*)(float*, std::int64_t, const std::uint16_t*, std::int64_t, const std::uint16_t*,
                             std::int64_t, std::int64_t, bool);
    static constexpr BlockFn kBlocks[2][2] = {{&amx_block<Tiles, 1, 1>, &amx_block<Tiles, 1, 2>},
                                              {&amx_block<Tiles, 2, 1>, &amx_block<Tiles, 2, 2>}};
    kBlocks[nr > kTileRows ? 1 : 0][nz - 1](c, ldc, a, lda, b, ldb, k_count, row_scale != nullptr);
  }
};

// The driver's block sizes this Policy can tile (see the header comment).
constexpr bool amx_tiles_fit(const TileConfig& config) {
  return config.block_q > 0 && config.block_q % (2 * kTileRows) == 0 && config.block_k > 0 &&
         config.block_k % kTileBf16K == 0;
}

}  // namespace
}  // namespace attnprof::cpu
