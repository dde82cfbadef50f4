#include "cpu/elementwise.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "cpu/row_kernels.h"
#include "cpu/strided.h"

namespace attnprof::cpu::kernels {
namespace {

float* float_buffer(int slot, std::int64_t n) {
  thread_local std::vector<float> buffers[3];
  auto& b = buffers[slot];
  if (static_cast<std::int64_t>(b.size()) < n) b.resize(static_cast<std::size_t>(n));
  return b.data();
}
std::uint8_t* byte_buffer(int slot, std::int64_t n) {
  thread_local std::vector<std::uint8_t> buffers[2];
  auto& b = buffers[slot];
  if (static_cast<std::int64_t>(b.size()) < n) b.resize(static_cast<std::size_t>(n));
  return b.data();
}

bool is_float16_or_32(DType d) { return d == DType::fp32 || d == DType::bf16 || d == DType::fp16; }

void require_dtype(const char* op, const Tensor& t, bool ok, const char* allowed) {
  if (!ok) throw Error(fmt::format("cpu {}: {} has an unsupported dtype; allowed: {}", op, t.describe(), allowed));
}

}  // namespace

void copy(Tensor& dst, const Tensor& src) {
  require_same_shape("copy", dst, {&src});
  const Strided4 d = strided4(dst), s = strided4(src);
  const std::int64_t n = d.shape[3];
  if (dst.dtype() == src.dtype()) {  // bit copy: exact for every dtype, fp64 included
    const std::size_t es = static_cast<std::size_t>(d.esize);
    for_each_row(d, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2) {
      char* out = d.row(i0, i1, i2);
      const char* in = s.row(i0, i1, i2);
      if (d.strides[3] == 1 && s.strides[3] == 1) {
        std::memmove(out, in, es * static_cast<std::size_t>(n));
      } else {
        for (std::int64_t i = 0; i < n; ++i) std::memmove(out + i * d.strides[3] * d.esize, in + i * s.strides[3] * s.esize, es);
      }
    });
    return;
  }
  if (dst.dtype() == DType::fp64) {  // widening to fp64 through fp32 would lose nothing for fp32/bf16/fp16 sources
    require_dtype("copy", src, is_float16_or_32(src.dtype()) || src.dtype() == DType::boolean, "bf16, fp16, fp32, bool");
  }
  for_each_row(d, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2) {
    float* buf = float_buffer(0, n);
    load_row(buf, s, s.row(i0, i1, i2), n);
    store_row(d, d.row(i0, i1, i2), buf, n);
  });
}

void fill(Tensor& dst, double value) {
  const Strided4 d = strided4(dst);
  const std::int64_t n = d.shape[3];
  for_each_row(d, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2) {
    float* buf = float_buffer(0, n);
    for (std::int64_t i = 0; i < n; ++i) buf[i] = static_cast<float>(value);
    store_row(d, d.row(i0, i1, i2), buf, n);
  });
}

void mul_scalar(Tensor& dst, const Tensor& src, double scalar) {
  require_same_shape("mul", dst, {&src});
  const Strided4 d = strided4(dst), s = strided4(src);
  const std::int64_t n = d.shape[3];
  for_each_row(d, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2) {
    float* buf = float_buffer(0, n);
    load_row(buf, s, s.row(i0, i1, i2), n);
    row_kernels().scale(buf, static_cast<float>(scalar), n);
    store_row(d, d.row(i0, i1, i2), buf, n);
  });
}

void add(Tensor& dst, const Tensor& a, const Tensor& b) {
  require_same_shape("add", dst, {&a, &b});
  const Strided4 d = strided4(dst), sa = strided4(a), sb = strided4(b);
  const std::int64_t n = d.shape[3];
  for_each_row(d, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2) {
    float* x = float_buffer(0, n);
    float* y = float_buffer(1, n);
    load_row(x, sa, sa.row(i0, i1, i2), n);
    load_row(y, sb, sb.row(i0, i1, i2), n);
    for (std::int64_t i = 0; i < n; ++i) x[i] += y[i];
    store_row(d, d.row(i0, i1, i2), x, n);
  });
}

void masked_fill(Tensor& dst, const Tensor& src, const Tensor& mask, double value) {
  require_same_shape("masked_fill", dst, {&src, &mask});
  require_dtype("masked_fill", mask, mask.dtype() == DType::boolean, "bool mask");
  const Strided4 d = strided4(dst), s = strided4(src), m = strided4(mask);
  const std::int64_t n = d.shape[3];
  const float v = static_cast<float>(value);
  for_each_row(d, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2) {
    float* x = float_buffer(0, n);
    std::uint8_t* k = byte_buffer(0, n);
    load_row(x, s, s.row(i0, i1, i2), n);
    load_row_bool(k, m, m.row(i0, i1, i2), n);
    for (std::int64_t i = 0; i < n; ++i) x[i] = k[i] ? v : x[i];
    store_row(d, d.row(i0, i1, i2), x, n);
  });
}

void where(Tensor& dst, const Tensor& condition, const Tensor& if_true, const Tensor& if_false) {
  require_same_shape("where", dst, {&condition, &if_true, &if_false});
  require_dtype("where", condition, condition.dtype() == DType::boolean, "bool condition");
  const Strided4 d = strided4(dst), c = strided4(condition), t = strided4(if_true), f = strided4(if_false);
  const std::int64_t n = d.shape[3];
  for_each_row(d, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2) {
    float* x = float_buffer(0, n);
    float* y = float_buffer(1, n);
    std::uint8_t* k = byte_buffer(0, n);
    load_row_bool(k, c, c.row(i0, i1, i2), n);
    load_row(x, t, t.row(i0, i1, i2), n);
    load_row(y, f, f.row(i0, i1, i2), n);
    for (std::int64_t i = 0; i < n; ++i) x[i] = k[i] ? x[i] : y[i];
    store_row(d, d.row(i0, i1, i2), x, n);
  });
}

void logical_not(Tensor& dst, const Tensor& src) {
  require_same_shape("logical_not", dst, {&src});
  const Strided4 d = strided4(dst), s = strided4(src);
  const std::int64_t n = d.shape[3];
  for_each_row(d, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2) {
    std::uint8_t* k = byte_buffer(0, n);
    load_row_bool(k, s, s.row(i0, i1, i2), n);
    for (std::int64_t i = 0; i < n; ++i) k[i] = k[i] ? 0 : 1;
    store_row_bool(d, d.row(i0, i1, i2), k, n);
  });
}

void isneginf(Tensor& dst, const Tensor& src) {
  require_same_shape("isneginf", dst, {&src});
  const Strided4 d = strided4(dst), s = strided4(src);
  const std::int64_t n = d.shape[3];
  const float neg_inf = -INFINITY;
  for_each_row(d, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2) {
    float* x = float_buffer(0, n);
    std::uint8_t* k = byte_buffer(0, n);
    load_row(x, s, s.row(i0, i1, i2), n);
    for (std::int64_t i = 0; i < n; ++i) k[i] = x[i] == neg_inf;
    store_row_bool(d, d.row(i0, i1, i2), k, n);
  });
}

void triangle(Tensor& dst, const Tensor& src, std::int64_t diagonal, bool upper) {
  require_same_shape(upper ? "triu" : "tril", dst, {&src});
  const Strided4 d = strided4(dst), s = strided4(src);
  const std::int64_t n = d.shape[3];
  for_each_row(d, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2) {
    float* x = float_buffer(0, n);
    load_row(x, s, s.row(i0, i1, i2), n);
    for (std::int64_t j = 0; j < n; ++j) {
      const bool keep = upper ? j - i2 >= diagonal : j - i2 <= diagonal;
      x[j] = keep ? x[j] : 0.0f;
    }
    store_row(d, d.row(i0, i1, i2), x, n);
  });
}

void all_lastdim(Tensor& dst, const Tensor& src) {
  const Strided4 d = strided4(dst), s = strided4(src);
  for (int i = 0; i < 3; ++i) {
    if (d.shape[i] != s.shape[i] || d.shape[3] != 1) {
      throw Error(fmt::format("cpu all: destination {} must be {} with last dim 1", dst.describe(), src.describe()));
    }
  }
  const std::int64_t n = s.shape[3];
  for_each_row(s, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2) {
    std::uint8_t* k = byte_buffer(0, n);
    load_row_bool(k, s, s.row(i0, i1, i2), n);
    std::uint8_t all = 1;
    for (std::int64_t i = 0; i < n; ++i) all &= k[i];
    store_row_bool(d, d.row(i0, i1, i2), &all, 1);
  });
}

void sum_head_groups(Tensor& dst, const Tensor& src) {
  if (dst.rank() != 4 || src.rank() != 4 || dst.size(0) != src.size(0) || dst.size(2) != src.size(2) ||
      dst.size(3) != src.size(3) || dst.size(1) == 0 || src.size(1) % dst.size(1) != 0) {
    throw Error(fmt::format("cpu sum_head_groups: {} does not sum into {} by groups of heads", src.describe(),
                            dst.describe()));
  }
  require_dtype("sum_head_groups", src, is_float16_or_32(src.dtype()), "bf16, fp16, fp32");
  require_dtype("sum_head_groups", dst, is_float16_or_32(dst.dtype()), "bf16, fp16, fp32");
  const Strided4 d = strided4(dst), s = strided4(src);
  const std::int64_t n = d.shape[3], group = src.size(1) / dst.size(1);
  for_each_row(d, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2) {
    float* acc = float_buffer(0, n);
    float* row = float_buffer(1, n);
    load_row(acc, s, s.row(i0, i1 * group, i2), n);
    for (std::int64_t g = 1; g < group; ++g) {
      load_row(row, s, s.row(i0, i1 * group + g, i2), n);
      for (std::int64_t j = 0; j < n; ++j) acc[j] += row[j];
    }
    store_row(d, d.row(i0, i1, i2), acc, n);
  });
}

}  // namespace attnprof::cpu::kernels
