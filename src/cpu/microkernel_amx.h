#pragma once
// The AMX (AMX-TILE + AMX-BF16) micro-kernel: C[R][N] (+)= A[R][K] · B[K][N] with fp32 C, bf16 A
// and B, on the tile registers. Internal linkage in each file that includes it.
//
// Tile registers (one palette for everything, every tile 16 rows × 64 bytes):
//   tmm0..3  C, fp32 16 × 16: tmm0 (rows 0-15, cols 0-15), tmm1 (rows 0-15, cols 16-31),
//            tmm2 (rows 16-31, cols 0-15), tmm3 (rows 16-31, cols 16-31)
//   tmm4..5  A, bf16 16 rows × 32 along K (row stride = lda)
//   tmm6..7  B, bf16 in the VNNI pair layout [K/2][16 columns][2]: 16 pair-rows of 64 bytes
// A 2 × 2 block of C tiles (32 × 32) per call: each step of 32 along K loads 2 A and 2 B tiles
// for 4 tdpbf16ps (16·16·32 multiply-adds each), so a loaded tile feeds two products.
//
// The operands' layouts are the vdpbf16ps path's (microkernel_bf16_avx512.h): A row-major with a
// row pitch, B packed [K/2][ldb/2][2]; so the packed K and V panels of the tile driver serve both
// micro-kernels unchanged (ldb = 2·padded columns; columns c0.. of B start at b + 2·c0).
//
// The tile operations go through a Tiles backend (static load<T>/store<T>/zero<T>/dot<C, A, B>)
// so a scalar emulation of the same instructions (tests/cpu/amx_emulated.cpp) runs this code on
// CPUs without AMX; HardwareTiles (attention_amx.cpp, compiled with -mamx-tile -mamx-bf16) is
// the real thing.
#include <cstdint>

namespace attnprof::cpu {
namespace {

// The 64-byte operand of ldtilecfg (palette 1).
struct alignas(64) TilePalette {
  std::uint8_t palette_id = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t bytes_per_row[16] = {};  // tmm0..7; 8..15 must stay 0
  std::uint8_t rows[16] = {};
};
static_assert(sizeof(TilePalette) == 64, "ldtilecfg reads exactly 64 bytes");

constexpr int kTileRows = 16;
constexpr int kTileBytesPerRow = 64;
constexpr int kTileFp32Cols = kTileBytesPerRow / 4;  // 16 fp32 columns of C
constexpr int kTileBf16K = kTileBytesPerRow / 2;     // 32 bf16 along K in an A row
constexpr int kTileRegisters = 8;

// Every tile 16 × 64 bytes: the shape of all eight registers above.
constexpr TilePalette attention_palette() {
  TilePalette p;
  for (int t = 0; t < kTileRegisters; ++t) {
    p.bytes_per_row[t] = kTileBytesPerRow;
    p.rows[t] = kTileRows;
  }
  return p;
}

// GCC's tileloadd intrinsic is an asm statement without a memory operand: without this barrier the
// compiler may sink the AVX-512 stores of P (or of the rescaled O) past the tile loads that read them.
inline void compiler_memory_barrier() { __asm__ __volatile__("" ::: "memory"); }

// C[16·RT][16·CT] (+)= A[16·RT][k_count] · B[k_count][16·CT]. k_count is a multiple of 32; A's
// rows are read with row pitch lda (elements), B's pair-rows with pitch ldb (elements), C's rows
// with pitch ldc (fp32 elements). accumulate: load C first, else start from zero.
template <class Tiles, int RT, int CT>
void amx_block(float* c, std::int64_t ldc, const std::uint16_t* a, std::int64_t lda, const std::uint16_t* b,
               std::int64_t ldb, std::int64_t k_count, bool accumulate) {
  static_assert((RT == 1 || RT == 2) && (CT == 1 || CT == 2), "a block is at most 2 × 2 C tiles");
  const std::int64_t c_stride = ldc * 4, a_stride = lda * 2, b_stride = ldb * 2;  // bytes
  float* c1 = c + kTileRows * ldc;  // rows 16-31
  compiler_memory_barrier();
  if (accumulate) {
    Tiles::template load<0>(c, c_stride);
    if constexpr (CT == 2) Tiles::template load<1>(c + kTileFp32Cols, c_stride);
    if constexpr (RT == 2) Tiles::template load<2>(c1, c_stride);
    if constexpr (RT == 2 && CT == 2) Tiles::template load<3>(c1 + kTileFp32Cols, c_stride);
  } else {
    Tiles::template zero<0>();
    if constexpr (CT == 2) Tiles::template zero<1>();
    if constexpr (RT == 2) Tiles::template zero<2>();
    if constexpr (RT == 2 && CT == 2) Tiles::template zero<3>();
  }
  for (std::int64_t k = 0; k < k_count; k += kTileBf16K) {
    const std::uint16_t* ak = a + k;
    const std::uint16_t* bk = b + (k / 2) * ldb;  // pair-row k/2
    Tiles::template load<4>(ak, a_stride);
    Tiles::template load<6>(bk, b_stride);
    Tiles::template dot<0, 4, 6>();
    if constexpr (CT == 2) {
      Tiles::template load<7>(bk + 2 * kTileFp32Cols, b_stride);  // columns 16-31: 16 pairs further
      Tiles::template dot<1, 4, 7>();
    }
    if constexpr (RT == 2) {
      Tiles::template load<5>(ak + kTileRows * lda, a_stride);
      Tiles::template dot<2, 5, 6>();
      if constexpr (CT == 2) Tiles::template dot<3, 5, 7>();
    }
  }
  Tiles::template store<0>(c, c_stride);
  if constexpr (CT == 2) Tiles::template store<1>(c + kTileFp32Cols, c_stride);
  if constexpr (RT == 2) Tiles::template store<2>(c1, c_stride);
  if constexpr (RT == 2 && CT == 2) Tiles::template store<3>(c1 + kTileFp32Cols, c_stride);
}

}  // namespace
}  // namespace attnprof::cpu
