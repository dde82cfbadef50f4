#pragma once
// fp64 attention on sampled rows, and the device tensors of a problem in either layout.
#include <attnprof/attention.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <vector>

#include "cuda/gpu_test_util.h"

namespace attnprof::cuda::gpu_testing {

// A device tensor holding `logical` ([B,H,S,D], contiguous host) in the spec's layout, indexed [B,H,S,D].
inline Tensor in_layout(const Tensor& logical, Layout layout) {
  const std::int64_t B = logical.size(0), H = logical.size(1), S = logical.size(2), D = logical.size(3);
  if (layout == Layout::bhsd) return to_device(logical);
  Tensor store = Tensor::empty({B, S, H, D}, logical.dtype(), Device::cpu);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t s = 0; s < S; ++s)
        for (std::int64_t d = 0; d < D; ++d)
          set(store, ((b * S + s) * H + h) * D + d, get(logical, offset4(logical, b, h, s, d)));
  return to_device(store).view_strided({B, H, S, D}, {S * H * D, D, H * D, 1});
}

inline Tensor empty_in_layout(const std::vector<std::int64_t>& shape, DType dtype, Layout layout) {
  const std::int64_t B = shape[0], H = shape[1], S = shape[2], D = shape[3];
  if (layout == Layout::bhsd) return Tensor::empty(shape, dtype, Device::cuda);
  return Tensor::empty({B, S, H, D}, dtype, Device::cuda).view_strided({B, H, S, D}, {S * H * D, D, H * D, 1});
}

// Rows to check: all when few, else the edges of 64-row tiles, the tail and a spread.
inline std::vector<std::int64_t> sample_rows(std::int64_t seq_q) {
  std::set<std::int64_t> rows;
  if (seq_q <= 80) {
    for (std::int64_t r = 0; r < seq_q; ++r) rows.insert(r);
  } else {
    for (std::int64_t r : {0, 1, 15, 16, 63, 64, 127, 128, 129}) if (r < seq_q) rows.insert(r);
    for (std::int64_t r = seq_q - 3; r < seq_q; ++r) rows.insert(r);
    for (std::int64_t i = 0; i < 12; ++i) rows.insert(seq_q * i / 12 + 7 < seq_q ? seq_q * i / 12 + 7 : seq_q - 1);
  }
  return {rows.begin(), rows.end()};
}

struct ReferenceResult {
  double rel_error = 0.0;           // ‖out − ref‖ / ‖ref‖ over the sampled rows
  double baseline_rel_error = 0.0;  // the same for a low-precision reference (P and O rounded to the dtype)
  double lse_max_abs_error = 0.0;
  std::int64_t non_finite = 0;      // over the whole output (NaN poison left = unwritten)
  std::int64_t masked_nonzero = 0;  // elements of rows that see no key (every row checked) that are not 0
  std::int64_t masked_rows = 0;     // rows that see no key
};

inline double round_to(double value, DType dtype) {
  const float f = static_cast<float>(value);
  if (dtype == DType::bf16) return bf16_to_float(float_to_bf16(f));
  if (dtype == DType::fp16) return fp16_to_float(float_to_fp16(f));
  return f;
}

// Rows [first, first + count) of head h of batch b of a [B, H, S, D] tensor (any strides) as
// doubles, row-major: the reference's inner loops read these rather than converting per access.
inline std::vector<double> head_doubles(const Tensor& t, std::int64_t b, std::int64_t h, std::int64_t first,
                                        std::int64_t count) {
  std::vector<double> values(static_cast<std::size_t>(count * t.size(3)));
  std::size_t i = 0;
  for (std::int64_t s = first; s < first + count; ++s)
    for (std::int64_t d = 0; d < t.size(3); ++d) values[i++] = get(t, offset4(t, b, h, s, d));
  return values;
}

// Keys row `row` sees: [0, keys_seen) — causal: key j iff j <= row + causal_offset.
inline std::int64_t keys_seen(const AttentionSpec& spec, std::int64_t causal_offset, std::int64_t row) {
  if (!spec.causal) return spec.seq_k;
  return std::clamp<std::int64_t>(row + causal_offset + 1, 0, spec.seq_k);
}

// max_heads: check only the first (batch, head) pairs (benchmarks at large shapes); -1 checks all.
// causal_offset: the diagonal's offset (default: the spec's own, AttentionSpec::causal_offset()).
// Rows that see no key must be exactly zero (every such row is checked) with LSE -inf.
inline ReferenceResult compare_with_fp64(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v,
                                         const Tensor& out_host, const Tensor* lse_host, std::int64_t max_heads = -1,
                                         std::optional<std::int64_t> causal_offset = std::nullopt) {
  ReferenceResult r;
  const std::int64_t offset = causal_offset.value_or(spec.causal_offset());
  for (std::int64_t i = 0; i < out_host.numel(); ++i)
    if (!std::isfinite(get(out_host, i))) ++r.non_finite;
  for (std::int64_t b = 0; b < spec.batch; ++b)
    for (std::int64_t h = 0; h < spec.heads; ++h)
      for (std::int64_t row = 0; row < spec.seq_q; ++row) {
        if (keys_seen(spec, offset, row) > 0) continue;
        if (b == 0 && h == 0) ++r.masked_rows;
        for (std::int64_t d = 0; d < spec.head_dim; ++d)
          if (get(out_host, offset4(out_host, b, h, row, d)) != 0.0) ++r.masked_nonzero;
      }
  const double scale = 1.0 / std::sqrt(static_cast<double>(spec.head_dim));
  const std::int64_t group = spec.heads / spec.kv_heads, D = spec.head_dim;
  std::vector<double> kd, vd;  // K and V of the kv head in use, [Sk, D]
  std::int64_t kv_loaded = -1;  // b · kv_heads + kv head of kd and vd
  double err2 = 0, base2 = 0, ref2 = 0;
  std::vector<double> s(static_cast<std::size_t>(spec.seq_k)), o(static_cast<std::size_t>(D)), ob(static_cast<std::size_t>(D));
  std::int64_t heads_checked = 0;
  for (std::int64_t b = 0; b < spec.batch; ++b)
    for (std::int64_t h = 0; h < spec.heads; ++h) {
      if (max_heads >= 0 && heads_checked++ >= max_heads) break;
      if (b * spec.kv_heads + h / group != kv_loaded) {
        kd = head_doubles(k, b, h / group, 0, spec.seq_k);
        vd = head_doubles(v, b, h / group, 0, spec.seq_k);
        kv_loaded = b * spec.kv_heads + h / group;
      }
      for (std::int64_t row : sample_rows(spec.seq_q)) {
        const std::int64_t kept = keys_seen(spec, offset, row);
        double mx = -std::numeric_limits<double>::infinity();
        const std::vector<double> q_r = head_doubles(q, b, h, row, 1);
        for (std::int64_t c = 0; c < kept; ++c) {
          double dot = 0;
          const double* k_r = &kd[static_cast<std::size_t>(c * D)];
          for (std::int64_t d = 0; d < D; ++d) dot += q_r[static_cast<std::size_t>(d)] * k_r[d];
          s[static_cast<std::size_t>(c)] = dot * scale;
          mx = std::max(mx, dot * scale);
        }
        double sum = 0;
        for (std::int64_t c = 0; c < kept; ++c) sum += std::exp(s[static_cast<std::size_t>(c)] - mx);
        std::fill(o.begin(), o.end(), 0.0);
        std::fill(ob.begin(), ob.end(), 0.0);
        for (std::int64_t c = 0; c < kept; ++c) {
          double p = std::exp(s[static_cast<std::size_t>(c)] - mx) / sum;
          double p_low = round_to(std::exp(s[static_cast<std::size_t>(c)] - mx), spec.dtype) / sum;  // P in the dtype, as fused kernels keep it
          const double* v_r = &vd[static_cast<std::size_t>(c * D)];
          for (std::int64_t d = 0; d < D; ++d) {
            double vv = v_r[d];
            o[static_cast<std::size_t>(d)] += p * vv;
            ob[static_cast<std::size_t>(d)] += p_low * vv;
          }
        }
        for (std::int64_t d = 0; d < D; ++d) {
          const double low = round_to(ob[static_cast<std::size_t>(d)], spec.dtype);
          double got = get(out_host, offset4(out_host, b, h, row, d));
          err2 += (got - o[static_cast<std::size_t>(d)]) * (got - o[static_cast<std::size_t>(d)]);
          base2 += (low - o[static_cast<std::size_t>(d)]) * (low - o[static_cast<std::size_t>(d)]);
          ref2 += o[static_cast<std::size_t>(d)] * o[static_cast<std::size_t>(d)];
        }
        if (lse_host != nullptr) {
          double got = get(*lse_host, (b * spec.heads + h) * spec.seq_q + row);
          if (kept == 0) {  // no key: LSE -inf exactly
            if (!(std::isinf(got) && got < 0)) r.lse_max_abs_error = std::numeric_limits<double>::infinity();
          } else {
            double want = mx + std::log(sum);
            r.lse_max_abs_error = std::max(r.lse_max_abs_error, std::abs(got - want));
          }
        }
      }
    }
  r.rel_error = std::sqrt(err2 / ref2);
  r.baseline_rel_error = std::sqrt(base2 / ref2);
  return r;
}

}  // namespace attnprof::cuda::gpu_testing
