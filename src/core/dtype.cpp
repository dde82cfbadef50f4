#include <attnprof/dtype.h>
#include <attnprof/error.h>

#include <string>

namespace attnprof {

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::bf16: return "bf16";
    case DType::fp16: return "fp16";
    case DType::fp32: return "fp32";
    case DType::fp64: return "fp64";
    case DType::boolean: return "bool";
    case DType::int32: return "int32";
  }
  return "?";
}

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::bf16:
    case DType::fp16: return 2;
    case DType::fp32:
    case DType::int32: return 4;
    case DType::fp64: return 8;
    case DType::boolean: return 1;
  }
  return 0;
}

DType parse_dtype(std::string_view name) {
  if (name == "bf16" || name == "bfloat16") return DType::bf16;
  if (name == "fp16" || name == "float16" || name == "half") return DType::fp16;
  if (name == "fp32" || name == "float32" || name == "float") return DType::fp32;
  if (name == "fp64" || name == "float64" || name == "double") return DType::fp64;
  if (name == "bool") return DType::boolean;
  if (name == "int32") return DType::int32;
  throw UsageError("dtype: unknown dtype '" + std::string(name) + "'; allowed: bf16, fp16, fp32");
}

// IEEE binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
float fp16_to_float(fp16 value) {
  std::uint32_t sign = static_cast<std::uint32_t>(value.bits & 0x8000u) << 16;
  std::uint32_t exponent = (value.bits >> 10) & 0x1fu;
  std::uint32_t mantissa = value.bits & 0x3ffu;
  std::uint32_t word;
  if (exponent == 0x1f) {
    word = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    word = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    word = sign;
  } else {  // subnormal: normalise
    int shift = 0;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    mantissa &= 0x3ffu;
    word = sign | (static_cast<std::uint32_t>(113 - shift) << 23) | (mantissa << 13);
  }
  float result;
  std::memcpy(&result, &word, sizeof result);
  return result;
}

fp16 float_to_fp16(float value) {
  std::uint32_t word;
  std::memcpy(&word, &value, sizeof word);
  std::uint16_t sign = static_cast<std::uint16_t>((word >> 16) & 0x8000u);
  std::uint32_t abs_word = word & 0x7fffffffu;
  if (abs_word >= 0x7f800000u) {  // inf or NaN
    std::uint16_t nan_bit = abs_word > 0x7f800000u ? 0x200u : 0;
    return fp16{static_cast<std::uint16_t>(sign | 0x7c00u | nan_bit)};
  }
  if (abs_word >= 0x477ff000u) {  // rounds to >= 65520: overflow to inf
    return fp16{static_cast<std::uint16_t>(sign | 0x7c00u)};
  }
  if (abs_word < 0x38800000u) {  // below the smallest normal (2^-14): subnormal or zero
    // value = m · 2^-24 with m rounded to nearest even.
    std::uint32_t exponent = abs_word >> 23;
    if (exponent < 102) return fp16{sign};  // below half the smallest subnormal
    std::uint32_t mantissa = (abs_word & 0x7fffffu) | 0x800000u;
    std::uint32_t shift = 126 - exponent;  // brings the value to units of 2^-24
    std::uint32_t result = mantissa >> shift;
    std::uint32_t remainder = mantissa & ((1u << shift) - 1);
    std::uint32_t halfway = 1u << (shift - 1);
    if (remainder > halfway || (remainder == halfway && (result & 1u))) ++result;
    return fp16{static_cast<std::uint16_t>(sign | result)};
  }
  std::uint32_t rounded = abs_word + 0xfffu + ((abs_word >> 13) & 1u);
  std::uint32_t half = ((rounded >> 13) - (112u << 10)) & 0xffffu;
  return fp16{static_cast<std::uint16_t>(sign | half)};
}

}  // namespace attnprof
