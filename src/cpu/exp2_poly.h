#pragma once
// exp via exp2: e^x = 2^(x·log2 e). 2^x = 2^n · 2^f with n = round(x), f = x − n ∈ [−½, ½], and
// 2^f from its degree-6 Taylor polynomial (truncation error (½·ln 2)^7 / 7! ≈ 1.2e-7 relative,
// i.e. about one fp32 ulp). Shared by the AVX-512 and the portable kernels so both agree.
namespace attnprof::cpu::exp2_poly {

inline constexpr float kLog2e = 1.4426950408889634f;
// ln(2)^k / k!
inline constexpr float kC1 = 0.6931471805599453f;
inline constexpr float kC2 = 0.2402265069591007f;
inline constexpr float kC3 = 0.05550410866482158f;
inline constexpr float kC4 = 0.009618129107628477f;
inline constexpr float kC5 = 0.0013333558146428443f;
inline constexpr float kC6 = 0.00015403530393381606f;
// Below this 2^x is returned as exactly 0 (masked scores, −inf) and above kMax as +inf.
inline constexpr float kMin = -150.0f;
inline constexpr float kMax = 128.0f;

// Portable scalar form, written so GCC vectorises loops over it (no calls, no branches).
inline float exp2_portable(float x) {
  bool is_nan = x != x;
  float xc = x < kMin ? kMin : (x > kMax ? kMax : x);
  xc = is_nan ? 0.0f : xc;
  float n = __builtin_floorf(xc + 0.5f);
  float f = xc - n;
  float p = kC6;
  p = p * f + kC5;
  p = p * f + kC4;
  p = p * f + kC3;
  p = p * f + kC2;
  p = p * f + kC1;
  p = p * f + 1.0f;
  // 2^n in two halves so n down to −150 and up to 128 stay representable as normal floats.
  int ni = static_cast<int>(n);
  int half = ni / 2;
  auto pow2 = [](int e) {
    unsigned bits = static_cast<unsigned>(e + 127) << 23;
    float r;
    __builtin_memcpy(&r, &bits, sizeof r);
    return r;
  };
  float r = p * pow2(half) * pow2(ni - half);
  r = x < kMin ? 0.0f : r;
  r = x >= kMax ? __builtin_inff() : r;
  return is_nan ? x : r;
}

}  // namespace attnprof::cpu::exp2_poly
