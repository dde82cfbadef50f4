#include "cuda/flash_hopper_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

namespace attnprof::cuda::flash_testing {

using namespace gpu_testing;

std::string describe(const Problem& p) {
  return "B" + std::to_string(p.B) + " H" + std::to_string(p.H) + "/" + std::to_string(p.Hkv) + " Sq" +
         std::to_string(p.Sq) + " Sk" + std::to_string(p.Sk) + " D" + std::to_string(p.D) +
         (p.causal ? " causal offset " + std::to_string(p.causal_offset) : std::string(" full")) + " " +
         std::string(p.layout == Layout::bhsd ? "bhsd" : "bshd") + " " + std::string(dtype_name(p.dtype)) +
         (p.key_ramp ? " key-ramp" : "");
}

Inputs make_inputs(const Problem& p, std::uint64_t seed) {
  Inputs in;
  in.q_host = random_host({p.B, p.H, p.Sq, p.D}, p.dtype, seed);
  in.k_host = random_host({p.B, p.Hkv, p.Sk, p.D}, p.dtype, seed + 1);
  in.v_host = random_host({p.B, p.Hkv, p.Sk, p.D}, p.dtype, seed + 2);
  if (p.key_ramp)
    for (std::int64_t i = 0; i < in.k_host.numel(); ++i) {
      const std::int64_t key = (i / p.D) % p.Sk;
      set(in.k_host, i, get(in.k_host, i) * (1.0 + 3.0 * static_cast<double>(p.Sk - 1 - key) / static_cast<double>(p.Sk)));
    }
  in.q = in_layout(in.q_host, p.layout);
  in.k = in_layout(in.k_host, p.layout);
  in.v = in_layout(in.v_host, p.layout);
  return in;
}

AttentionSpec spec_of(const Problem& p) {
  AttentionSpec spec;
  spec.batch = p.B;
  spec.heads = p.H;
  spec.kv_heads = p.Hkv;
  spec.seq_q = p.Sq;
  spec.seq_k = p.Sk;
  spec.head_dim = p.D;
  spec.causal = p.causal;
  spec.dtype = p.dtype;
  spec.layout = p.layout;
  spec.device = Device::cuda;
  return spec;
}

FusedAttentionArgs args_of(const Problem& p, const Inputs& in, Tensor& out, Tensor* lse) {
  FusedAttentionArgs a = fused_attention_args(spec_of(p), out, in.q, in.k, in.v, lse);  // the backend's
  a.causal_offset = p.causal ? p.causal_offset : 0;  // any offset, not only the two alignments
  return a;
}

Tensor run_kernel(const Problem& p, const Inputs& in, Tensor* lse, hopper::FlashSchedule schedule) {
  Tensor out = empty_in_layout({p.B, p.H, p.Sq, p.D}, p.dtype, p.layout);
  poison(out);
  if (lse != nullptr) poison(*lse);
  hopper::launch_flash_attention_sm90(args_of(p, in, out, lse), backend_stream(), schedule);
  gpu().synchronize();
  return to_host(out);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.numel() == b.numel() && a.dtype() == b.dtype() &&
         std::memcmp(a.raw(), b.raw(), static_cast<std::size_t>(a.numel()) * dtype_size(a.dtype())) == 0;
}

namespace {
std::string at(std::int64_t b, std::int64_t h, std::int64_t row, std::int64_t d) {
  return "b " + std::to_string(b) + " h " + std::to_string(h) + " row " + std::to_string(row) +
         (d >= 0 ? " d " + std::to_string(d) : std::string());
}
}  // namespace

Check check_against_fp64(const Problem& p, const Inputs& in, const Tensor& out, const Tensor& lse) {
  Check c;
  for (std::int64_t b = 0; b < p.B; ++b)
    for (std::int64_t h = 0; h < p.H; ++h)
      for (std::int64_t row = 0; row < p.Sq; ++row)
        for (std::int64_t d = 0; d < p.D; ++d)
          if (!std::isfinite(get(out, offset4(out, b, h, row, d))) && c.non_finite++ == 0)
            c.first_non_finite = at(b, h, row, d);
  for (std::int64_t i = 0; i < lse.numel(); ++i)
    if (std::isnan(get(lse, i)) || get(lse, i) == std::numeric_limits<double>::infinity()) ++c.lse_nan;
  const double scale = 1.0 / std::sqrt(static_cast<double>(p.D));
  const std::int64_t group = p.H / p.Hkv;
  double err2 = 0, base2 = 0, ref2 = 0, worst_abs = -1;
  std::vector<double> s(static_cast<std::size_t>(p.Sk)), o(static_cast<std::size_t>(p.D)), ob(static_cast<std::size_t>(p.D));
  for (std::int64_t b = 0; b < p.B; ++b)
    for (std::int64_t h = 0; h < p.H; ++h)
      for (std::int64_t row : sample_rows(p.Sq)) {
        const std::int64_t kept =
            p.causal ? std::clamp<std::int64_t>(row + p.causal_offset + 1, 0, p.Sk) : p.Sk;
        const double got_lse = get(lse, (b * p.H + h) * p.Sq + row);
        if (kept == 0) {
          ++c.blind_rows;
          bool wrong = !(std::isinf(got_lse) && got_lse < 0);
          for (std::int64_t d = 0; d < p.D; ++d) wrong |= get(out, offset4(out, b, h, row, d)) != 0.0;
          c.blind_rows_wrong += wrong ? 1 : 0;
          continue;
        }
        double mx = -std::numeric_limits<double>::infinity();
        for (std::int64_t j = 0; j < kept; ++j) {
          double dot = 0;
          for (std::int64_t d = 0; d < p.D; ++d)
            dot += get(in.q_host, offset4(in.q_host, b, h, row, d)) * get(in.k_host, offset4(in.k_host, b, h / group, j, d));
          s[static_cast<std::size_t>(j)] = dot * scale;
          mx = std::max(mx, dot * scale);
        }
        double sum = 0;
        for (std::int64_t j = 0; j < kept; ++j) sum += std::exp(s[static_cast<std::size_t>(j)] - mx);
        std::fill(o.begin(), o.end(), 0.0);
        std::fill(ob.begin(), ob.end(), 0.0);
        for (std::int64_t j = 0; j < kept; ++j) {
          const double e = std::exp(s[static_cast<std::size_t>(j)] - mx);
          const double prob = e / sum, prob_low = round_to(e, p.dtype) / sum;
          for (std::int64_t d = 0; d < p.D; ++d) {
            const double value = get(in.v_host, offset4(in.v_host, b, h / group, j, d));
            o[static_cast<std::size_t>(d)] += prob * value;
            ob[static_cast<std::size_t>(d)] += prob_low * value;
          }
        }
        for (std::int64_t d = 0; d < p.D; ++d) {
          const double want = o[static_cast<std::size_t>(d)];
          const double got = get(out, offset4(out, b, h, row, d));
          const double low = round_to(ob[static_cast<std::size_t>(d)], p.dtype);
          err2 += (got - want) * (got - want);
          base2 += (low - want) * (low - want);
          ref2 += want * want;
          if (!(std::abs(got - want) <= worst_abs)) {  // NaN counts as the worst
            worst_abs = std::isnan(got) ? std::numeric_limits<double>::infinity() : std::abs(got - want);
            c.worst = at(b, h, row, d) + ": got " + std::to_string(got) + ", want " + std::to_string(want);
          }
        }
        const double lse_error = std::abs(got_lse - (mx + std::log(sum)));
        if (!(lse_error <= c.lse_max_abs_error)) {
          c.lse_max_abs_error = std::isnan(lse_error) ? std::numeric_limits<double>::infinity() : lse_error;
          c.worst_lse = at(b, h, row, -1) + ": got " + std::to_string(got_lse) + ", want " +
                        std::to_string(mx + std::log(sum));
        }
      }
  c.rel_error = ref2 > 0 ? std::sqrt(err2 / ref2) : 0.0;
  c.baseline_rel_error = ref2 > 0 ? std::sqrt(base2 / ref2) : 0.0;
  return c;
}

void expect_matches_fp64(hopper::FlashSchedule schedule, const std::string& name, const Problem& p,
                         std::uint64_t seed, bool o_without_lse) {
  const Inputs in = make_inputs(p, seed);
  Tensor lse = Tensor::empty({p.B, p.H, p.Sq}, DType::fp32, Device::cuda);
  const Tensor with_lse = run_kernel(p, in, &lse, schedule);
  const Tensor out = o_without_lse ? run_kernel(p, in, nullptr, schedule) : with_lse;
  const Check c = check_against_fp64(p, in, out, to_host(lse));
  const std::string what = name + " " + describe(p);
  EXPECT_EQ(c.non_finite, 0) << what << ": elements left unwritten (NaN poison) or non-finite, the first at "
                             << c.first_non_finite;
  EXPECT_EQ(c.lse_nan, 0) << what << ": LSE entries left NaN (unwritten) or +inf";
  EXPECT_EQ(c.blind_rows_wrong, 0) << what << ": rows that see no key must be zeros with LSE -inf";
  // At most twice the error of an fp64 reference that rounds P and O to the dtype (plus a floor).
  EXPECT_LE(c.rel_error, 2.0 * c.baseline_rel_error + 2e-4)
      << what << " baseline " << c.baseline_rel_error << "; worst element " << c.worst;
  EXPECT_LE(c.rel_error, 1e-2) << what << "; worst element " << c.worst;
  EXPECT_LE(c.lse_max_abs_error, 1e-3) << what << "; worst LSE " << c.worst_lse;
  std::printf("%s: rel err %.2e (low-precision baseline %.2e), lse max err %.1e, blind rows %lld\n", what.c_str(),
              c.rel_error, c.baseline_rel_error, c.lse_max_abs_error, static_cast<long long>(c.blind_rows));
}

}  // namespace attnprof::cuda::flash_testing
