#pragma once
// One bf16 × bf16 matrix product on vdpbf16ps (gemm_bf16_avx512.cpp), used by batched_gemm per
// (b, h) when the CPU has AVX512_BF16 and the operands qualify (unit stride along K for A, along
// the contiguous dim for B, even K, unit column stride for C).
#include <cstdint>

namespace attnprof::cpu::detail {

struct Bf16Gemm {
  const std::uint16_t* a = nullptr;  // M×K, rows lda apart, unit stride along K
  std::int64_t lda = 0;
  const std::uint16_t* b = nullptr;  // N×K (b_rows_are_n: q·kᵀ) or K×N, rows ldb apart, unit stride
  std::int64_t ldb = 0;
  bool b_rows_are_n = false;
  void* c = nullptr;  // M×N, rows ldc apart, bf16 or fp32
  std::int64_t ldc = 0;
  bool c_is_fp32 = false;
  std::int64_t m = 0, n = 0, k = 0;  // k even
  float alpha = 1.0f;
};

// Scratch for one call: the packed B (K · round_up(N, 16) bf16) and a 6×64 fp32 staging tile.
inline std::int64_t bf16_gemm_pack_elements(std::int64_t n, std::int64_t k) { return k * ((n + 15) / 16 * 16); }
constexpr std::int64_t kBf16GemmStagingFloats = 6 * 64;

void gemm_bf16_avx512(const Bf16Gemm& g, std::uint16_t* b_pack, float* staging);

}  // namespace attnprof::cpu::detail
