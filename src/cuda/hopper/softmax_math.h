#pragma once
// Two pieces of the flash kernel's softmax that move work off the SM's slow pipes (v9,
// flash_hopper.cu). At D 64 a key tile's softmax needs 16,384 exp2 per CTA, 1,024 cycles of the
// SM's 16-per-cycle MUFU unit: as long as the tile's GEMMs at peak, so the softmax, not the tensor
// cores, sets the pace (FA3's paper: 989 TFLOP/s of matmul against 3.9 TFLOP/s of special
// functions on an H100).
//   - soft_exp2: 2^x on the FMA and integer pipes (Cody-Waite split + a cubic), for a share of the
//     elements, as FlashAttention-4 does on Blackwell: 2^x = 2^⌊x⌋ · 2^f, f = x − ⌊x⌋ ∈ [0, 1);
//     ⌊x⌋ from adding 1.5·2^23 rounding down (its low mantissa bits then hold ⌊x⌋), 2^f from a cubic
//     fitted for the least largest relative error (8.6e-5, under bf16's 2^-9 rounding of P), 2^⌊x⌋
//     built in the exponent field. Inputs are clamped to [−127, ∞) with a NaN-keeping max, so a
//     masked −∞ gives exactly 0 (as does anything below −126: the denormal results, which
//     ex2.approx.ftz flushes too) and a NaN stays NaN; valid below 128 (the kernel's are ≤ 0) (the scale is a multiply, not an integer add
//     onto the result's bits, which would turn NaN into a number).
//   - pack_bf16x2_rn: two floats to a bf16 pair by integer rounding and one byte permute instead of
//     `cvt.rn.bf16x2.f32` (F2FP), which Hopper runs at a low rate: round to nearest, ties away from
//     zero (add half an ulp of bf16 to the bits, keep the high 16): differs from cvt.rn's ties-to-even
//     only on exact ties. Finite inputs only (P ∈ [0, 1]); a NaN's bits may carry into the sign and
//     exponent — the kernel's row sum, kept in fp32, still carries the NaN to the output.
// Host and device compute the same values (tests/cuda/softmax_math_test.cpp checks the host
// path against fp64, probes.cu the device path).
#include <cstdint>
#include <cstring>

#include "cuda/hopper/host_device.h"

#if !defined(__CUDA_ARCH__)
#include <cmath>
#endif

namespace attnprof::cuda::hopper {

// The cubic's coefficients: 2^f ≈ 1 + f·(c1 + f·(c2 + f·c3)) on [0, 1).
inline constexpr float kExp2C1 = 0.6951161107f;
inline constexpr float kExp2C2 = 0.2276480312f;
inline constexpr float kExp2C3 = 0.0770642657f;
inline constexpr float kExp2Lowest = -127.0f;        // ⌊x⌋ = −127 makes the scale 0
inline constexpr float kRoundingMagic = 12582912.0f;  // 1.5 · 2^23

ATTNPROF_HOST_DEVICE inline std::uint32_t float_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}

ATTNPROF_HOST_DEVICE inline float bits_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}

ATTNPROF_HOST_DEVICE inline float soft_exp2(float x) {
#if defined(__CUDA_ARCH__)
  float clamped, shifted;
  asm("max.NaN.f32 %0, %1, %2;\n" : "=f"(clamped) : "f"(x), "f"(kExp2Lowest));
  asm("add.rm.f32 %0, %1, %2;\n" : "=f"(shifted) : "f"(clamped), "f"(kRoundingMagic));
  const float whole = __fsub_rn(shifted, kRoundingMagic);  // ⌊x⌋, exact
  const float f = __fsub_rn(clamped, whole);
  const float two_f = __fmaf_rn(f, __fmaf_rn(f, __fmaf_rn(f, kExp2C3, kExp2C2), kExp2C1), 1.0f);
#else
  const float clamped = std::isnan(x) ? x : (x < kExp2Lowest ? kExp2Lowest : x);
  const float whole = std::floor(clamped);
  const float shifted = whole + kRoundingMagic;  // exact for |⌊x⌋| < 2^22, as the device's add.rm
  const float f = clamped - whole;
  const float two_f = std::fma(f, std::fma(f, std::fma(f, kExp2C3, kExp2C2), kExp2C1), 1.0f);
#endif
  // shifted's bits are those of 1.5·2^23 plus ⌊x⌋; shifted left by 23 the constant's bits leave the
  // word, so this is (⌊x⌋ + 127) << 23: 2^⌊x⌋, or 0 for ⌊x⌋ = −127.
  const float scale = bits_float((float_bits(shifted) << 23) + 0x3F800000u);
  return two_f * scale;
}

// bf16 bits of x rounded to nearest (ties away from zero), in the high half of the word.
ATTNPROF_HOST_DEVICE inline std::uint32_t bf16_rounded_high(float x) { return float_bits(x) + 0x8000u; }

// lo in bits 0-15, hi in bits 16-31, as cvt.rn.bf16x2.f32 packs them.
ATTNPROF_HOST_DEVICE inline std::uint32_t pack_bf16x2_rn(float lo, float hi) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(bf16_rounded_high(lo), bf16_rounded_high(hi), 0x7632);
#else
  return (bf16_rounded_high(lo) >> 16) | (bf16_rounded_high(hi) & 0xFFFF0000u);
#endif
}

}  // namespace attnprof::cuda::hopper
