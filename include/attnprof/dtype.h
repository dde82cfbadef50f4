#pragma once
// Element types and the bf16/fp16 <-> fp32 conversions (round to nearest, ties to even).
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace attnprof {

enum class DType { bf16, fp16, fp32, fp64, boolean, int32 };

std::string_view dtype_name(DType dtype);       // "bf16", "fp16", "fp32", "fp64", "bool", "int32"
std::size_t dtype_size(DType dtype);
// Accepts the names above and torch's spellings (bfloat16, float16, half, float32, float, float64, double).
// Throws UsageError naming the allowed values.
DType parse_dtype(std::string_view name);

struct bf16 {
  std::uint16_t bits;
};
struct fp16 {
  std::uint16_t bits;
};

inline float bf16_to_float(bf16 value) {
  std::uint32_t word = static_cast<std::uint32_t>(value.bits) << 16;
  float result;
  std::memcpy(&result, &word, sizeof result);
  return result;
}

inline bf16 float_to_bf16(float value) {
  std::uint32_t word;
  std::memcpy(&word, &value, sizeof word);
  if ((word & 0x7f800000u) == 0x7f800000u && (word & 0x007fffffu) != 0) {
    return bf16{static_cast<std::uint16_t>((word >> 16) | 0x0040u)};  // keep NaN a (quiet) NaN
  }
  std::uint32_t rounding_bias = 0x7fffu + ((word >> 16) & 1u);
  return bf16{static_cast<std::uint16_t>((word + rounding_bias) >> 16)};
}

float fp16_to_float(fp16 value);
fp16 float_to_fp16(float value);

}  // namespace attnprof
