// Portable row kernels: plain loops GCC vectorises at the baseline ISA (checked with
// -fopt-info-vec); used on CPUs without AVX-512 and when --cpu-isa portable caps them.
#include <attnprof/dtype.h>

#include <cstring>
#include <limits>

#include "cpu/exp2_poly.h"
#include "cpu/row_kernels.h"

namespace attnprof::cpu::portable {
namespace {

float row_max(const float* x, std::int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
  bool nan = false;
  for (std::int64_t i = 0; i < n; ++i) {
    m = x[i] > m ? x[i] : m;
    nan |= x[i] != x[i];
  }
  return nan ? std::numeric_limits<float>::quiet_NaN() : m;
}

float exp2_sum(float* dst, const float* x, float c, float m, std::int64_t n) {
  float sum = 0.0f;
  for (std::int64_t i = 0; i < n; ++i) {
    float e = exp2_poly::exp2_portable((x[i] - m) * c);
    dst[i] = e;
    sum += e;
  }
  return sum;
}

void scale(float* x, float s, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) x[i] *= s;
}

void load(float* dst, const void* src, DType dtype, std::int64_t n) {
  switch (dtype) {
    case DType::fp32: std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float)); return;
    case DType::bf16: {
      const auto* s = static_cast<const std::uint16_t*>(src);
      for (std::int64_t i = 0; i < n; ++i) {
        std::uint32_t w = static_cast<std::uint32_t>(s[i]) << 16;
        std::memcpy(&dst[i], &w, sizeof w);
      }
      return;
    }
    case DType::fp16: {
      const auto* s = static_cast<const fp16*>(src);
      for (std::int64_t i = 0; i < n; ++i) dst[i] = fp16_to_float(s[i]);
      return;
    }
    default: break;
  }
  for (std::int64_t i = 0; i < n; ++i) dst[i] = 0.0f;  // unreachable: callers pass float dtypes
}

void store(void* dst, DType dtype, const float* src, std::int64_t n) {
  switch (dtype) {
    case DType::fp32: std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float)); return;
    case DType::bf16: {
      auto* d = static_cast<bf16*>(dst);
      for (std::int64_t i = 0; i < n; ++i) d[i] = float_to_bf16(src[i]);
      return;
    }
    case DType::fp16: {
      auto* d = static_cast<fp16*>(dst);
      for (std::int64_t i = 0; i < n; ++i) d[i] = float_to_fp16(src[i]);
      return;
    }
    default: return;
  }
}

}  // namespace

const RowKernels kRowKernels{row_max, exp2_sum, scale, load, store};

}  // namespace attnprof::cpu::portable
