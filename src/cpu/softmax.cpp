// Softmax kernels. Per row: load as fp32 (one vectorised conversion when contiguous), max,
// 2^((x − max)·log2 e) with the row sum in the same pass, one scaling pass, store.
// Bytes: one read and one write of the row; FLOPs ≈ 15 vector ops per 16 elements.
#include "cpu/softmax.h"

#include <cmath>
#include <vector>

#include "cpu/exp2_poly.h"
#include "cpu/row_kernels.h"
#include "cpu/strided.h"

namespace attnprof::cpu::kernels {
namespace {
// Each thread's row buffers: `which` 0 for the row, 1 for a second operand's.
float* row_buffer(std::int64_t n, int which = 0) {
  thread_local std::vector<float> buffers[2];
  std::vector<float>& buffer = buffers[which];
  if (static_cast<std::int64_t>(buffer.size()) < n) buffer.resize(static_cast<std::size_t>(n));
  return buffer.data();
}
}  // namespace

void softmax_lastdim(Tensor& dst, const Tensor& src) {
  require_same_shape("softmax", dst, {&src});
  const Strided4 d = strided4(dst), s = strided4(src);
  const std::int64_t n = d.shape[3];
  const RowKernels& rk = row_kernels();
  for_each_row(d, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2) {
    float* x = row_buffer(n);
    load_row(x, s, s.row(i0, i1, i2), n);
    const float m = rk.max(x, n);
    const float sum = rk.exp2_sum(x, x, exp2_poly::kLog2e, m, n);
    rk.scale(x, 1.0f / sum, n);
    store_row(d, d.row(i0, i1, i2), x, n);
  });
}

void scale_mask_softmax(Tensor& dst, const Tensor& src, double scale, bool causal, std::int64_t causal_offset) {
  require_same_shape("scale_mask_softmax", dst, {&src});
  const Strided4 d = strided4(dst), s = strided4(src);
  const std::int64_t n = d.shape[3];
  const RowKernels& rk = row_kernels();
  const float c = static_cast<float>(scale) * exp2_poly::kLog2e;
  for_each_row(d, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2) {
    float* x = row_buffer(n);
    load_row(x, s, s.row(i0, i1, i2), n);
    const std::int64_t reach = i2 + 1 + causal_offset;  // keys 0..reach-1 are visible
    const std::int64_t visible = causal ? (reach < 0 ? 0 : (reach < n ? reach : n)) : n;
    const float m = rk.max(x, visible);
    const float sum = visible > 0 ? rk.exp2_sum(x, x, c, m, visible) : 0.0f;
    rk.scale(x, sum > 0.0f ? 1.0f / sum : 0.0f, visible);
    for (std::int64_t j = visible; j < n; ++j) x[j] = 0.0f;
    store_row(d, d.row(i0, i1, i2), x, n);
  });
}

void softmax_backward(Tensor& dst, const Tensor& grad, const Tensor& probs, double scale) {
  require_same_shape("softmax_backward", dst, {&grad, &probs});
  const Strided4 d = strided4(dst), g = strided4(grad), p = strided4(probs);
  const std::int64_t n = d.shape[3];
  const float s = static_cast<float>(scale);
  for_each_row(d, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2) {
    float* dy = row_buffer(n, 0);
    float* y = row_buffer(n, 1);
    load_row(dy, g, g.row(i0, i1, i2), n);
    load_row(y, p, p.row(i0, i1, i2), n);
    float dot = 0.0f;
    for (std::int64_t j = 0; j < n; ++j) dot += dy[j] * y[j];
    for (std::int64_t j = 0; j < n; ++j) dy[j] = s * y[j] * (dy[j] - dot);
    store_row(d, d.row(i0, i1, i2), dy, n);
  });
}

}  // namespace attnprof::cpu::kernels
