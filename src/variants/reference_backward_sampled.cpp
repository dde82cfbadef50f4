// The sampled fp64 gradient check (reference_backward.h): dq on sampled query rows, dk and dv on
// sampled keys of sampled (batch, kv head) groups, each computed in fp64 for those elements alone.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "variants/reference.h"
#include "variants/reference_access.h"
#include "variants/reference_backward.h"

namespace attnprof::variants {
namespace {

using detail::element;
using detail::HeadCache;
using detail::load_row;

// `count` evenly spaced indices of [0, total): the first and the last included, all when count ≥ total.
std::vector<std::int64_t> evenly_spaced(std::int64_t count, std::int64_t total) {
  count = std::min(count, total);
  std::vector<std::int64_t> picked(static_cast<std::size_t>(count));
  for (std::int64_t n = 0; n < count; ++n)
    picked[static_cast<std::size_t>(n)] = count > 1 ? n * (total - 1) / (count - 1) : 0;
  return picked;
}

// How many of something costing `each` MACs fit `budget`, within [lo, hi].
std::int64_t fit(std::int64_t budget, double each, std::int64_t lo, std::int64_t hi) {
  const double n = each > 0 ? static_cast<double>(budget) / each : static_cast<double>(hi);
  return std::clamp(static_cast<std::int64_t>(std::min(n, static_cast<double>(hi))), lo, hi);
}

double dot(const double* a, const double* b, std::int64_t D) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (std::int64_t d = 0; d < D; ++d) s += a[d] * b[d];
  return s;
}

// y += a·x
void axpy(double a, const double* x, double* y, std::int64_t D) {
#pragma omp simd
  for (std::int64_t d = 0; d < D; ++d) y[d] += a * x[d];
}

// out[j] = x · rows[j] for j < n (rows [n][D] contiguous), four rows at a time so the four sums
// run side by side.
void dots(const double* x, const double* rows, std::int64_t n, std::int64_t D, double* out) {
  std::int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const double *r0 = rows + j * D, *r1 = r0 + D, *r2 = r1 + D, *r3 = r2 + D;
    double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
#pragma omp simd reduction(+ : a0, a1, a2, a3)
    for (std::int64_t d = 0; d < D; ++d) {
      a0 += x[d] * r0[d];
      a1 += x[d] * r1[d];
      a2 += x[d] * r2[d];
      a3 += x[d] * r3[d];
    }
    out[j] = a0;
    out[j + 1] = a1;
    out[j + 2] = a2;
    out[j + 3] = a3;
  }
  for (; j < n; ++j) out[j] = dot(x, rows + j * D, D);
}

// Softmax of scale·scores[0, n) in place (p_j), returning the log-sum-exp of the scaled scores.
double softmax(double* scores, std::int64_t n, double scale) {
  double max_score = -std::numeric_limits<double>::infinity();
  for (std::int64_t j = 0; j < n; ++j) max_score = std::max(max_score, scores[j] *= scale);
  double sum = 0;
  for (std::int64_t j = 0; j < n; ++j) sum += (scores[j] = std::exp(scores[j] - max_score));
  for (std::int64_t j = 0; j < n; ++j) scores[j] /= sum;
  return max_score + std::log(sum);
}

struct Sums {
  double diff2 = 0, ref2 = 0;
  double rel() const { return ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2); }
};

// Adds (x[b, h, i, :] − ref)² and ref² to sums.
void compare_row(const Tensor& x, std::int64_t b, std::int64_t h, std::int64_t i, const double* ref,
                 std::int64_t D, double& diff2, double& ref2) {
  for (std::int64_t d = 0; d < D; ++d) {
    const std::int64_t idx[4]{b, h, i, d};
    const double diff = element(x, idx) - ref[d];
    diff2 += diff * diff;
    ref2 += ref[d] * ref[d];
  }
}

// dq on the sampled rows: p = softmax(scale·q·Kᵀ), dP = dout·Vᵀ, Δ = Σ p·dP,
// dq = scale·Σ_j p_j·(dP_j − Δ)·k_j.
Sums check_dq(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& dout,
              const Tensor& dq, const std::vector<std::int64_t>& rows) {
  const std::int64_t H = spec.heads, Sq = spec.seq_q, D = spec.head_dim, group = spec.heads / spec.kv_heads;
  const double scale = spec.softmax_scale();
  double diff2 = 0, ref2 = 0;
  // Static: each thread takes a run of rows in (b, h) order, so it loads each head's K/V once.
#pragma omp parallel reduction(+ : diff2, ref2)
  {
    HeadCache cache;
    std::vector<double> qrow(static_cast<std::size_t>(D)), drow(qrow), ref(qrow), p, dp;
#pragma omp for schedule(static)
    for (std::size_t n = 0; n < rows.size(); ++n) {
      const std::int64_t r = rows[n], b = r / (H * Sq), h = (r / Sq) % H, i = r % Sq;
      const std::int64_t visible = visible_keys(spec, i);
      std::fill(ref.begin(), ref.end(), 0.0);
      if (visible > 0) {
        cache.load(spec, k, v, b, h / group);
        load_row(q, b, h, i, D, qrow.data());
        load_row(dout, b, h, i, D, drow.data());
        p.resize(static_cast<std::size_t>(visible));
        dp.resize(static_cast<std::size_t>(visible));
        dots(qrow.data(), cache.k.data(), visible, D, p.data());
        softmax(p.data(), visible, scale);
        dots(drow.data(), cache.v.data(), visible, D, dp.data());
        double delta = 0;
        for (std::int64_t j = 0; j < visible; ++j)
          delta += p[static_cast<std::size_t>(j)] * dp[static_cast<std::size_t>(j)];
        for (std::int64_t j = 0; j < visible; ++j) {
          const double ds = p[static_cast<std::size_t>(j)] * (dp[static_cast<std::size_t>(j)] - delta);
          axpy(scale * ds, cache.k.data() + j * D, ref.data(), D);
        }
      }
      compare_row(dq, b, h, i, ref.data(), D, diff2, ref2);
    }
  }
  return {diff2, ref2};
}

constexpr std::int64_t kRowBlock = 32;  // query rows that share each key tile
constexpr std::int64_t kKeyTile = 64;   // keys (64·D doubles of K or V) read once per row block

// LSE and Δ = dout·out of query rows [i0, i0 + rows) of one head (q and dout rows [Sq][D] fp64,
// out in fp64), a block of rows over key tiles so K and V are read once per block. Rows that
// see no key are left alone.
void row_stats(const AttentionSpec& spec, const HeadCache& cache, const double* q, const double* dout,
               std::int64_t i0, std::int64_t rows, double* lse, double* delta, std::vector<double>& scores,
               std::vector<double>& out) {
  const std::int64_t Sk = spec.seq_k, D = spec.head_dim;
  scores.resize(static_cast<std::size_t>(rows * Sk));
  out.assign(static_cast<std::size_t>(rows * D), 0.0);
  std::int64_t most = 0;
  for (std::int64_t r = 0; r < rows; ++r) most = std::max(most, visible_keys(spec, i0 + r));
  for (std::int64_t j0 = 0; j0 < most; j0 += kKeyTile) {
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t n = std::min(j0 + kKeyTile, visible_keys(spec, i0 + r)) - j0;
      if (n > 0) dots(q + (i0 + r) * D, cache.k.data() + j0 * D, n, D, scores.data() + r * Sk + j0);
    }
  }
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t visible = visible_keys(spec, i0 + r);
    if (visible > 0) lse[i0 + r] = softmax(scores.data() + r * Sk, visible, spec.softmax_scale());
  }
  for (std::int64_t j0 = 0; j0 < most; j0 += kKeyTile) {
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t end = std::min(j0 + kKeyTile, visible_keys(spec, i0 + r));
      for (std::int64_t j = j0; j < end; ++j)
        axpy(scores[static_cast<std::size_t>(r * Sk + j)], cache.v.data() + j * D, out.data() + r * D, D);
    }
  }
  for (std::int64_t r = 0; r < rows; ++r) delta[i0 + r] = dot(dout + (i0 + r) * D, out.data() + r * D, D);
}

// dk and dv on the sampled keys of one (b, kv head) group: for each query head of the group, every
// row's LSE and Δ = dout·out (out in fp64), then for each sampled key j and each row i that sees
// it: p = exp(scale·q_i·k_j − LSE_i), dv_j += p·dout_i, dk_j += scale·p·(dout_i·v_j − Δ_i)·q_i.
void check_group_kv(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v,
                    const Tensor& dout, const Tensor& dk, const Tensor& dv, std::int64_t task,
                    const std::vector<std::int64_t>& keys, Sums& dk_sums, Sums& dv_sums) {
  const std::int64_t KVH = spec.kv_heads, Sq = spec.seq_q, D = spec.head_dim, group = spec.heads / spec.kv_heads;
  const std::int64_t b = task / KVH, hk = task % KVH;
  const double scale = spec.softmax_scale();
  const auto nk = static_cast<std::int64_t>(keys.size());
  HeadCache cache;
  cache.load(spec, k, v, b, hk);
  std::vector<double> qh(static_cast<std::size_t>(Sq * D)), dh(qh), lse(static_cast<std::size_t>(Sq)), delta(lse);
  std::vector<double> ref_dk(static_cast<std::size_t>(nk * D), 0.0), ref_dv(ref_dk);
  for (std::int64_t h = hk * group; h < (hk + 1) * group; ++h) {
#pragma omp parallel
    {
      std::vector<double> scores, out;
#pragma omp for schedule(dynamic, 1)
      for (std::int64_t i0 = 0; i0 < Sq; i0 += kRowBlock) {
        const std::int64_t rows = std::min(kRowBlock, Sq - i0);
        for (std::int64_t i = i0; i < i0 + rows; ++i) {
          load_row(q, b, h, i, D, qh.data() + i * D);
          load_row(dout, b, h, i, D, dh.data() + i * D);
        }
        row_stats(spec, cache, qh.data(), dh.data(), i0, rows, lse.data(), delta.data(), scores, out);
      }
      // Each key's sums are one thread's, over the heads then the rows in order: no atomics.
#pragma omp for schedule(dynamic, 1)
      for (std::int64_t n = 0; n < nk; ++n) {
        const std::int64_t j = keys[static_cast<std::size_t>(n)];
        const double* kj = cache.k.data() + j * D;
        const double* vj = cache.v.data() + j * D;
        double* dkj = ref_dk.data() + n * D;
        double* dvj = ref_dv.data() + n * D;
        // Row i sees key j when visible_keys(i) > j: every row without causal, else i ≥ j − offset.
        const std::int64_t first = spec.causal ? std::max<std::int64_t>(0, j - spec.causal_offset()) : 0;
        for (std::int64_t i = first; i < Sq; ++i) {
          const double* qi = qh.data() + i * D;
          const double* di = dh.data() + i * D;
          const double pij = std::exp(scale * dot(qi, kj, D) - lse[static_cast<std::size_t>(i)]);
          axpy(pij, di, dvj, D);
          axpy(scale * pij * (dot(di, vj, D) - delta[static_cast<std::size_t>(i)]), qi, dkj, D);
        }
      }
    }
  }
  for (std::int64_t n = 0; n < nk; ++n) {
    const std::int64_t j = keys[static_cast<std::size_t>(n)];
    compare_row(dk, b, hk, j, ref_dk.data() + n * D, D, dk_sums.diff2, dk_sums.ref2);
    compare_row(dv, b, hk, j, ref_dv.data() + n * D, D, dv_sums.diff2, dv_sums.ref2);
  }
}

}  // namespace

std::int64_t full_gradient_check_macs(const AttentionSpec& spec) {
  // In double: a shape the spec allows may count past int64 (then it is int64's largest).
  const double macs = 5.0 * static_cast<double>(spec.head_dim) * static_cast<double>(spec.batch) *
                      static_cast<double>(spec.heads) * spec.visible_pairs();
  return macs >= 0x1p63 ? std::numeric_limits<std::int64_t>::max() : static_cast<std::int64_t>(macs);
}

GradientSample gradient_sample(const AttentionSpec& spec, std::int64_t sample_macs) {
  const double pairs = spec.visible_pairs();  // per (b, h)
  const double D = static_cast<double>(spec.head_dim), group = static_cast<double>(spec.heads / spec.kv_heads);
  const std::int64_t kv_tasks = spec.batch * spec.kv_heads;
  GradientSample s;
  s.dq_rows = evenly_spaced(fit(sample_macs, 3 * D * pairs / static_cast<double>(spec.seq_q), 64, 4096),
                            spec.batch * spec.heads * spec.seq_q);
  s.kv_groups = evenly_spaced(fit(sample_macs, 2 * D * group * pairs, 1, 8), kv_tasks);
  const double per_key =
      4 * D * group * pairs / static_cast<double>(spec.seq_k) * static_cast<double>(s.kv_groups.size());
  s.keys = evenly_spaced(fit(sample_macs, per_key, 64, 1024), spec.seq_k);
  return s;
}

GradientErrors check_gradients_sampled(const AttentionSpec& spec, const Tensor& q, const Tensor& k,
                                       const Tensor& v, const Tensor& dout, const Tensor& dq, const Tensor& dk,
                                       const Tensor& dv, std::int64_t sample_macs) {
  const GradientSample sample = gradient_sample(spec, sample_macs);
  GradientErrors err;
  err.sampled = true;
  err.dq_rows = static_cast<std::int64_t>(sample.dq_rows.size());
  err.dq_total_rows = spec.batch * spec.heads * spec.seq_q;
  err.kv_keys = static_cast<std::int64_t>(sample.keys.size());
  err.kv_total_keys = spec.seq_k;
  err.kv_groups = static_cast<std::int64_t>(sample.kv_groups.size());
  err.kv_total_groups = spec.batch * spec.kv_heads;
  err.dq = check_dq(spec, q, k, v, dout, dq, sample.dq_rows).rel();
  Sums dk_sums, dv_sums;
  for (const std::int64_t task : sample.kv_groups)
    check_group_kv(spec, q, k, v, dout, dk, dv, task, sample.keys, dk_sums, dv_sums);
  err.dk = dk_sums.rel();
  err.dv = dv_sums.rel();
  // A NaN outside the sample is found all the same: every element is scanned (O(size)).
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (count_nan(dq) > 0) err.dq = nan;
  if (count_nan(dk) > 0) err.dk = nan;
  if (count_nan(dv) > 0) err.dv = nan;
  return err;
}

}  // namespace attnprof::variants
