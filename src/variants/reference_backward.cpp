#include "variants/reference_backward.h"

#include <attnprof/error.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "variants/reference.h"
#include "variants/reference_access.h"

namespace attnprof::variants {
namespace {

using detail::element;
using detail::HeadCache;
using detail::load_row;
using detail::require_cpu;

// The gradients of one query row (b, h, i) against the K/V of its group (cache): writes dq_row and
// adds its share to dk/dv (fp64 [Sk][D] of this (b, kv head)).
//   p_j = softmax_j(scale·q·k_j) over the visible keys, dP_j = dout·v_j, Δ = Σ_j p_j·dP_j (= dout·out),
//   dS_j = p_j·(dP_j − Δ), dq = scale·Σ_j dS_j·k_j, dk_j += scale·dS_j·q, dv_j += p_j·dout.
struct RowGradients {
  std::vector<double> q, dout, p, ds;
  void run(const AttentionSpec& spec, const HeadCache& cache, std::int64_t visible, double* dq_row, double* dk,
           double* dv) {
    const std::int64_t D = spec.head_dim;
    const double scale = spec.softmax_scale();
    std::fill(dq_row, dq_row + D, 0.0);
    if (visible == 0) return;
    p.assign(static_cast<std::size_t>(visible), 0.0);
    ds.assign(static_cast<std::size_t>(visible), 0.0);
    double max_score = -std::numeric_limits<double>::infinity();
    for (std::int64_t j = 0; j < visible; ++j) {
      double s = 0;
      for (std::int64_t d = 0; d < D; ++d) s += q[static_cast<std::size_t>(d)] * cache.k[static_cast<std::size_t>(j * D + d)];
      p[static_cast<std::size_t>(j)] = s * scale;
      max_score = std::max(max_score, s * scale);
    }
    double sum = 0;
    for (double& s : p) sum += (s = std::exp(s - max_score));
    double delta = 0;
    for (std::int64_t j = 0; j < visible; ++j) {
      double& pj = p[static_cast<std::size_t>(j)];
      pj /= sum;
      double dp = 0;
      for (std::int64_t d = 0; d < D; ++d) dp += dout[static_cast<std::size_t>(d)] * cache.v[static_cast<std::size_t>(j * D + d)];
      ds[static_cast<std::size_t>(j)] = dp;
      delta += pj * dp;
    }
    for (std::int64_t j = 0; j < visible; ++j) {
      const double pj = p[static_cast<std::size_t>(j)];
      const double dsj = pj * (ds[static_cast<std::size_t>(j)] - delta);
      for (std::int64_t d = 0; d < D; ++d) {
        const auto jd = static_cast<std::size_t>(j * D + d);
        dq_row[d] += scale * dsj * cache.k[jd];
        dk[jd] += scale * dsj * q[static_cast<std::size_t>(d)];
        dv[jd] += pj * dout[static_cast<std::size_t>(d)];
      }
    }
  }
};

void require_shape(const Tensor& t, const char* what, std::int64_t B, std::int64_t H, std::int64_t S, std::int64_t D) {
  require_cpu(t, what);
  const std::vector<std::int64_t> want{B, H, S, D};
  if (t.shape() != want)
    throw Error(fmt::format("reference: {} is {}, the spec needs [{}, {}, {}, {}]", what, t.describe(), B, H, S, D));
}

// ‖x − ref‖ / ‖ref‖ over every element (ref is contiguous fp64 of x's shape).
double relative_error(const Tensor& x, const Tensor& ref) {
  const std::int64_t n0 = ref.size(0), n1 = ref.size(1), n2 = ref.size(2), n3 = ref.size(3);
  const double* r = ref.data<double>();
  double diff2 = 0, ref2 = 0;
#pragma omp parallel for schedule(static) reduction(+ : diff2, ref2)
  for (std::int64_t row = 0; row < n0 * n1 * n2; ++row) {
    for (std::int64_t d = 0; d < n3; ++d) {
      const std::int64_t idx[4]{row / (n1 * n2), (row / n2) % n1, row % n2, d};
      const double want = r[row * n3 + d];
      const double diff = element(x, idx) - want;
      diff2 += diff * diff;
      ref2 += want * want;
    }
  }
  return ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
}

}  // namespace

double GradientErrors::worst() const {
  if (std::isnan(dq) || std::isnan(dk) || std::isnan(dv)) return std::numeric_limits<double>::quiet_NaN();
  return std::max({dq, dk, dv});
}

std::string GradientErrors::scope() const {
  if (!sampled) return "all rows";
  return fmt::format("dq on {} sampled rows of {}, dk/dv on {} sampled keys of {} in {} of {} kv-head groups", dq_rows,
                     dq_total_rows, kv_keys, kv_total_keys, kv_groups, kv_total_groups);
}

ReferenceGradients reference_gradients(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& dout) {
  const std::int64_t B = spec.batch, H = spec.heads, KVH = spec.kv_heads, D = spec.head_dim;
  require_shape(q, "q", B, H, spec.seq_q, D);
  require_shape(k, "k", B, KVH, spec.seq_k, D);
  require_shape(v, "v", B, KVH, spec.seq_k, D);
  require_shape(dout, "dout", B, H, spec.seq_q, D);
  ReferenceGradients g;
  g.dq = Tensor::empty({B, H, spec.seq_q, D}, DType::fp64, Device::cpu);
  g.dk = Tensor::empty({B, KVH, spec.seq_k, D}, DType::fp64, Device::cpu);
  g.dv = Tensor::empty({B, KVH, spec.seq_k, D}, DType::fp64, Device::cpu);
  const std::int64_t group = H / KVH;
  const std::int64_t kv_elems = spec.seq_k * D;
  // One task per (b, kv head): it owns that head's dK/dV and visits the query rows of its group
  // in a fixed order, so the sums need no atomics and every run gives the same bits.
#pragma omp parallel
  {
    HeadCache cache;
    RowGradients row;
    row.q.resize(static_cast<std::size_t>(D));
    row.dout.resize(static_cast<std::size_t>(D));
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t task = 0; task < B * KVH; ++task) {
      const std::int64_t b = task / KVH, hk = task % KVH;
      cache.load(spec, k, v, b, hk);
      double* dk = g.dk.data<double>() + task * kv_elems;
      double* dv = g.dv.data<double>() + task * kv_elems;
      std::fill(dk, dk + kv_elems, 0.0);
      std::fill(dv, dv + kv_elems, 0.0);
      for (std::int64_t h = hk * group; h < (hk + 1) * group; ++h) {
        for (std::int64_t i = 0; i < spec.seq_q; ++i) {
          load_row(q, b, h, i, D, row.q.data());
          load_row(dout, b, h, i, D, row.dout.data());
          double* dq_row = g.dq.data<double>() + ((b * H + h) * spec.seq_q + i) * D;
          row.run(spec, cache, visible_keys(spec, i), dq_row, dk, dv);
        }
      }
    }
  }
  return g;
}

GradientErrors check_gradients(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v,
                               const Tensor& dout, const Tensor& dq, const Tensor& dk, const Tensor& dv,
                               std::int64_t max_full_macs) {
  require_shape(dq, "dq", spec.batch, spec.heads, spec.seq_q, spec.head_dim);
  require_shape(dk, "dk", spec.batch, spec.kv_heads, spec.seq_k, spec.head_dim);
  require_shape(dv, "dv", spec.batch, spec.kv_heads, spec.seq_k, spec.head_dim);
  if (full_gradient_check_macs(spec) > max_full_macs) {
    require_shape(q, "q", spec.batch, spec.heads, spec.seq_q, spec.head_dim);
    require_shape(k, "k", spec.batch, spec.kv_heads, spec.seq_k, spec.head_dim);
    require_shape(v, "v", spec.batch, spec.kv_heads, spec.seq_k, spec.head_dim);
    require_shape(dout, "dout", spec.batch, spec.heads, spec.seq_q, spec.head_dim);
    return check_gradients_sampled(spec, q, k, v, dout, dq, dk, dv);
  }
  const ReferenceGradients ref = reference_gradients(spec, q, k, v, dout);
  return {relative_error(dq, ref.dq), relative_error(dk, ref.dk), relative_error(dv, ref.dv)};
}

}  // namespace attnprof::variants
