#include "cpu/strided.h"

#include <fmt/format.h>

#include <cstring>

#include "cpu/row_kernels.h"

namespace attnprof::cpu {
namespace {

bool is_float16_or_32(DType d) { return d == DType::fp32 || d == DType::bf16 || d == DType::fp16; }

double load_scalar(const char* p, DType d) {
  switch (d) {
    case DType::fp32: { float x; std::memcpy(&x, p, 4); return x; }
    case DType::fp64: { double x; std::memcpy(&x, p, 8); return x; }
    case DType::bf16: { bf16 x; std::memcpy(&x, p, 2); return bf16_to_float(x); }
    case DType::fp16: { fp16 x; std::memcpy(&x, p, 2); return fp16_to_float(x); }
    case DType::boolean: return *reinterpret_cast<const std::uint8_t*>(p) != 0 ? 1.0 : 0.0;
    case DType::int32: { std::int32_t x; std::memcpy(&x, p, 4); return x; }
  }
  return 0.0;
}

void store_scalar(char* p, DType d, double v) {
  switch (d) {
    case DType::fp32: { float x = static_cast<float>(v); std::memcpy(p, &x, 4); return; }
    case DType::fp64: std::memcpy(p, &v, 8); return;
    case DType::bf16: { bf16 x = float_to_bf16(static_cast<float>(v)); std::memcpy(p, &x, 2); return; }
    case DType::fp16: { fp16 x = float_to_fp16(static_cast<float>(v)); std::memcpy(p, &x, 2); return; }
    case DType::boolean: *reinterpret_cast<std::uint8_t*>(p) = v != 0.0 ? 1 : 0; return;
    case DType::int32: { std::int32_t x = static_cast<std::int32_t>(v); std::memcpy(p, &x, 4); return; }
  }
}

}  // namespace

bool worth_parallel(std::int64_t elements) { return elements >= (1 << 15); }

Strided4 strided4(const Tensor& t) {
  if (t.rank() > 4) throw Error(fmt::format("cpu backend: rank {} tensor {}; at most 4 dims", t.rank(), t.describe()));
  Strided4 s;
  s.base = static_cast<char*>(t.raw());
  s.dtype = t.dtype();
  s.esize = static_cast<std::int64_t>(dtype_size(t.dtype()));
  const int pad = 4 - t.rank();
  for (int d = 0; d < t.rank(); ++d) {
    s.shape[pad + d] = t.size(d);
    s.strides[pad + d] = t.stride(d);
  }
  return s;
}

void require_same_shape(const char* op, const Tensor& dst, std::initializer_list<const Tensor*> operands) {
  for (const Tensor* t : operands) {
    if (t->shape() != dst.shape()) {
      throw Error(fmt::format("cpu {}: operand {} does not match destination {}", op, t->describe(), dst.describe()));
    }
  }
}

void load_row(float* dst, const Strided4& t, const char* row, std::int64_t n) {
  const std::int64_t s3 = t.strides[3];
  if (s3 == 1 && is_float16_or_32(t.dtype)) {
    row_kernels().load(dst, row, t.dtype, n);
  } else if (s3 == 0) {
    const float v = static_cast<float>(load_scalar(row, t.dtype));
    for (std::int64_t i = 0; i < n; ++i) dst[i] = v;
  } else {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(load_scalar(row + i * s3 * t.esize, t.dtype));
  }
}

void load_row_bool(std::uint8_t* dst, const Strided4& t, const char* row, std::int64_t n) {
  const std::int64_t s3 = t.strides[3];
  if (t.dtype == DType::boolean && s3 == 1) {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = row[i] != 0;
  } else {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = load_scalar(row + i * s3 * t.esize, t.dtype) != 0.0;
  }
}

void store_row(const Strided4& t, char* row, const float* src, std::int64_t n) {
  const std::int64_t s3 = t.strides[3];
  if (s3 == 1 && is_float16_or_32(t.dtype)) {
    row_kernels().store(row, t.dtype, src, n);
  } else {
    for (std::int64_t i = 0; i < n; ++i) store_scalar(row + i * s3 * t.esize, t.dtype, src[i]);
  }
}

void store_row_bool(const Strided4& t, char* row, const std::uint8_t* src, std::int64_t n) {
  const std::int64_t s3 = t.strides[3];
  if (t.dtype == DType::boolean && s3 == 1) {
    std::memcpy(row, src, static_cast<std::size_t>(n));
  } else {
    for (std::int64_t i = 0; i < n; ++i) store_scalar(row + i * s3 * t.esize, t.dtype, src[i] ? 1.0 : 0.0);
  }
}

}  // namespace attnprof::cpu
