// The sampled fp64 gradient check against the full one: the sample worked out by hand, its errors
// equal to the full reference's restricted to the sampled elements (causal both alignments with
// Sq ≠ Sk and rows that see no key, GQA, MQA, bshd strides, bf16/fp16/fp32 inputs), corrupted
// sampled elements found, NaN found anywhere, and the bound that chooses between the two.
#include <attnprof/attention.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "variants/reference_backward.h"

namespace attnprof {
namespace {

using variants::check_gradients;
using variants::check_gradients_sampled;
using variants::full_gradient_check_macs;
using variants::GradientErrors;
using variants::GradientSample;
using variants::gradient_sample;
using variants::reference_gradients;
using variants::ReferenceGradients;

// B 2, H 4, Hkv 2, Sq 150, Sk 200, D 16, causal bottom-right (offset 50): row i sees i + 51 keys,
// Σ = 150·51 + 149·150/2 = 18825 pairs per head.
AttentionSpec gqa_spec() {
  return AttentionSpec{.batch = 2, .heads = 4, .kv_heads = 2, .seq_q = 150, .seq_k = 200, .head_dim = 16,
                       .dtype = DType::fp32, .causal = true, .causal_align = CausalAlign::bottom_right};
}

TEST(SampledGradientCheck, FullWorkCountedByHand) {
  AttentionSpec spec{.batch = 1, .heads = 2, .kv_heads = 1, .seq_q = 4, .seq_k = 4, .head_dim = 8, .causal = true};
  EXPECT_EQ(full_gradient_check_macs(spec), 5 * 8 * 2 * (1 + 2 + 3 + 4));
  spec.causal = false;
  EXPECT_EQ(full_gradient_check_macs(spec), 5 * 8 * 2 * 16);
  spec = AttentionSpec{.batch = 1, .heads = 2, .kv_heads = 1, .seq_q = 4, .seq_k = 2, .head_dim = 8, .causal = true,
                       .causal_align = CausalAlign::bottom_right};
  EXPECT_EQ(full_gradient_check_macs(spec), 5 * 8 * 2 * (0 + 0 + 1 + 2));  // rows 0 and 1 see no key
  EXPECT_EQ(full_gradient_check_macs(gqa_spec()), 5 * 16 * 2 * 4 * 18825);
  // 5·256·2^10·2^10·2^40 = 1.4e21 does not fit: the largest int64, which no bound passes.
  spec = AttentionSpec{.batch = 1 << 10, .heads = 1 << 10, .kv_heads = 1, .seq_q = 1 << 20, .seq_k = 1 << 20,
                       .head_dim = 256, .causal = false};
  EXPECT_EQ(full_gradient_check_macs(spec), std::numeric_limits<std::int64_t>::max());
}

// With a 2.5e6-MAC budget: dq rows 2.5e6 / (3·16·18825/150 = 6024) = 415 of 1200; groups
// 2.5e6 / (2·16·2·18825 = 1204800) = 2 of 4, the first and the last; keys 2.5e6 / (4·16·2·18825/200·2
// = 24096) = 103 of 200. A budget of 1 MAC gives the floors: 64 rows, 1 group, 64 keys.
TEST(SampledGradientCheck, SampleWorkedOutByHand) {
  const GradientSample s = gradient_sample(gqa_spec(), 2'500'000);
  ASSERT_EQ(s.dq_rows.size(), 415u);
  EXPECT_EQ(s.dq_rows.front(), 0);
  EXPECT_EQ(s.dq_rows.back(), 1199);
  EXPECT_EQ(s.dq_rows[1], 1199 / 414);
  EXPECT_EQ(s.kv_groups, (std::vector<std::int64_t>{0, 3}));
  ASSERT_EQ(s.keys.size(), 103u);
  EXPECT_EQ(s.keys.front(), 0);
  EXPECT_EQ(s.keys.back(), 199);
  EXPECT_EQ(s.keys[51], 51 * 199 / 102);
  EXPECT_TRUE(std::is_sorted(s.keys.begin(), s.keys.end()));
  EXPECT_EQ(std::adjacent_find(s.keys.begin(), s.keys.end()), s.keys.end()) << "a key sampled twice";

  const GradientSample floor = gradient_sample(gqa_spec(), 1);
  EXPECT_EQ(floor.dq_rows.size(), 64u);
  EXPECT_EQ(floor.kv_groups, (std::vector<std::int64_t>{0}));
  EXPECT_EQ(floor.keys.size(), 64u);
  // The default budget covers this small problem whole: every row, group and key.
  const GradientSample all = gradient_sample(gqa_spec());
  EXPECT_EQ(all.dq_rows.size(), 1200u);
  EXPECT_EQ(all.kv_groups.size(), 4u);
  EXPECT_EQ(all.keys.size(), 200u);
}

struct Problem {
  AttentionSpec spec;
  AttentionInputs in;
  Tensor dout;
  ReferenceGradients ref;  // the full fp64 reference
};

Problem make_problem(const AttentionSpec& spec) {
  Problem p{spec, make_inputs(spec, 5), make_output_grad(spec, 5), {}};
  p.ref = reference_gradients(spec, p.in.q, p.in.k, p.in.v, p.dout);
  return p;
}

// ref + 1e-4·noise: a gradient about as close to fp64 as a good bf16 kernel's.
Tensor near(const Tensor& ref, std::uint64_t seed) {
  Tensor noise = Tensor::empty(ref.shape(), DType::fp64, Device::cpu);
  fill_normal(noise, seed);
  for (std::int64_t n = 0; n < ref.numel(); ++n)
    noise.data<double>()[n] = ref.data<double>()[n] + 1e-4 * noise.data<double>()[n];
  return noise;
}

// The errors of x (contiguous fp64) against the full reference over the sample's elements.
GradientErrors restricted_errors(const Problem& p, const GradientSample& s, const Tensor& dq, const Tensor& dk,
                                 const Tensor& dv) {
  const std::int64_t D = p.spec.head_dim, Sk = p.spec.seq_k;
  auto rel = [&](const Tensor& x, const Tensor& ref, const std::vector<std::int64_t>& rows) {
    double diff2 = 0, ref2 = 0;
    for (std::int64_t r : rows)
      for (std::int64_t d = 0; d < D; ++d) {
        const double want = ref.data<double>()[r * D + d], diff = x.data<double>()[r * D + d] - want;
        diff2 += diff * diff;
        ref2 += want * want;
      }
    return std::sqrt(diff2 / ref2);
  };
  std::vector<std::int64_t> kv_rows;
  for (std::int64_t g : s.kv_groups)
    for (std::int64_t j : s.keys) kv_rows.push_back(g * Sk + j);
  GradientErrors e;
  e.dq = rel(dq, p.ref.dq, s.dq_rows);
  e.dk = rel(dk, p.ref.dk, kv_rows);
  e.dv = rel(dv, p.ref.dv, kv_rows);
  return e;
}

void expect_sample_equals_restricted_full(const AttentionSpec& spec) {
  const Problem p = make_problem(spec);
  const Tensor dq = near(p.ref.dq, 11), dk = near(p.ref.dk, 12), dv = near(p.ref.dv, 13);
  for (std::int64_t budget : {std::int64_t{1}, std::int64_t{300'000}}) {
    const std::string what = fmt::format("{} budget {}", spec.shape_string(), budget);
    const GradientSample s = gradient_sample(spec, budget);
    ASSERT_LT(static_cast<std::int64_t>(s.dq_rows.size()), spec.batch * spec.heads * spec.seq_q) << what;
    ASSERT_LT(static_cast<std::int64_t>(s.keys.size()), spec.seq_k) << what;
    const GradientErrors got = check_gradients_sampled(spec, p.in.q, p.in.k, p.in.v, p.dout, dq, dk, dv, budget);
    const GradientErrors want = restricted_errors(p, s, dq, dk, dv);
    EXPECT_TRUE(got.sampled) << what;
    EXPECT_EQ(got.dq_rows, static_cast<std::int64_t>(s.dq_rows.size())) << what;
    EXPECT_EQ(got.kv_keys, static_cast<std::int64_t>(s.keys.size())) << what;
    EXPECT_EQ(got.kv_groups, static_cast<std::int64_t>(s.kv_groups.size())) << what;
    EXPECT_NEAR(got.dq, want.dq, 1e-9 * want.dq) << what;
    EXPECT_NEAR(got.dk, want.dk, 1e-9 * want.dk) << what;
    EXPECT_NEAR(got.dv, want.dv, 1e-9 * want.dv) << what;
    EXPECT_LT(got.worst(), 1e-2) << what;     // within the bf16 bound
    EXPECT_GT(std::min({got.dq, got.dk, got.dv}), 1e-6) << what;  // the noise is seen
  }
}

// Causal bottom-right with Sq > Sk (50 rows per head see no key), GQA, bshd bf16 inputs.
TEST(SampledGradientCheck, EqualsTheFullCheckOnTheSampleBottomRightBlindRowsGqa) {
  expect_sample_equals_restricted_full(AttentionSpec{.batch = 2, .heads = 4, .kv_heads = 2, .seq_q = 200,
                                                     .seq_k = 150, .head_dim = 16, .dtype = DType::bf16,
                                                     .causal = true, .causal_align = CausalAlign::bottom_right,
                                                     .layout = Layout::bshd});
}

// Causal top-left with Sq < Sk (keys past the last row's are seen by none: dk = dv = 0), MQA, fp32.
TEST(SampledGradientCheck, EqualsTheFullCheckOnTheSampleTopLeftMqa) {
  expect_sample_equals_restricted_full(AttentionSpec{.batch = 2, .heads = 4, .kv_heads = 1, .seq_q = 150,
                                                     .seq_k = 200, .head_dim = 24, .dtype = DType::fp32,
                                                     .causal = true});
}

// No mask, fp16 bshd.
TEST(SampledGradientCheck, EqualsTheFullCheckOnTheSampleNoMask) {
  expect_sample_equals_restricted_full(AttentionSpec{.batch = 2, .heads = 2, .kv_heads = 2, .seq_q = 97,
                                                     .seq_k = 97, .head_dim = 8, .dtype = DType::fp16,
                                                     .causal = false, .layout = Layout::bshd});
}

// A sample that covers every element is the full check, to rounding.
TEST(SampledGradientCheck, CoveringSampleEqualsTheFullCheck) {
  const Problem p = make_problem(gqa_spec());
  const Tensor dq = near(p.ref.dq, 21), dk = near(p.ref.dk, 22), dv = near(p.ref.dv, 23);
  const GradientErrors full = check_gradients(p.spec, p.in.q, p.in.k, p.in.v, p.dout, dq, dk, dv);
  const GradientErrors sampled = check_gradients(p.spec, p.in.q, p.in.k, p.in.v, p.dout, dq, dk, dv,
                                                 full_gradient_check_macs(p.spec) - 1);
  EXPECT_FALSE(full.sampled);
  EXPECT_EQ(full.scope(), "all rows");
  ASSERT_TRUE(sampled.sampled);
  EXPECT_EQ(sampled.scope(),
            "dq on 1200 sampled rows of 1200, dk/dv on 200 sampled keys of 200 in 4 of 4 kv-head groups");
  EXPECT_NEAR(sampled.dq, full.dq, 1e-9 * full.dq);
  EXPECT_NEAR(sampled.dk, full.dk, 1e-9 * full.dk);
  EXPECT_NEAR(sampled.dv, full.dv, 1e-9 * full.dv);
}

Tensor copy_of(const Tensor& t) {
  Tensor c = Tensor::empty(t.shape(), DType::fp64, Device::cpu);
  std::copy(t.data<double>(), t.data<double>() + t.numel(), c.data<double>());
  return c;
}

bool contains(const std::vector<std::int64_t>& v, std::int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// One element moved by 100 in a sampled dq row or a sampled key's dk is found (the exact gradient
// elsewhere); the same move in a key outside the sample is not: what the sample does not cover.
TEST(SampledGradientCheck, CorruptedSampledElementIsFound) {
  const Problem p = make_problem(gqa_spec());
  const std::int64_t budget = 2'500'000, D = p.spec.head_dim, Sk = p.spec.seq_k;
  const GradientSample s = gradient_sample(p.spec, budget);
  auto check = [&](const Tensor& dq, const Tensor& dk, const Tensor& dv) {
    return check_gradients_sampled(p.spec, p.in.q, p.in.k, p.in.v, p.dout, dq, dk, dv, budget);
  };
  const GradientErrors exact = check(p.ref.dq, p.ref.dk, p.ref.dv);
  EXPECT_LT(exact.worst(), 1e-12);

  Tensor dq = copy_of(p.ref.dq);
  dq.data<double>()[s.dq_rows[200] * D + 3] += 100;
  const GradientErrors bad_dq = check(dq, p.ref.dk, p.ref.dv);
  EXPECT_GT(bad_dq.dq, 1.0);
  EXPECT_LT(std::max(bad_dq.dk, bad_dq.dv), 1e-12);

  const std::int64_t group = s.kv_groups.back(), key = s.keys[40];
  Tensor dk = copy_of(p.ref.dk);
  dk.data<double>()[(group * Sk + key) * D + 5] += 100;
  const GradientErrors bad_dk = check(p.ref.dq, dk, p.ref.dv);
  EXPECT_GT(bad_dk.dk, 1.0);
  EXPECT_LT(std::max(bad_dk.dq, bad_dk.dv), 1e-12);

  std::int64_t outside = key;
  while (contains(s.keys, outside)) ++outside;  // the next key the sample skips
  ASSERT_LT(outside, Sk);
  Tensor dk_outside = copy_of(p.ref.dk);
  dk_outside.data<double>()[(group * Sk + outside) * D + 5] += 100;
  EXPECT_LT(check(p.ref.dq, dk_outside, p.ref.dv).dk, 1e-12) << "an element outside the sample is not compared";
}

// A NaN outside the sample (a dq row not sampled, a dv group not sampled) still makes that error
// NaN: every element is scanned.
TEST(SampledGradientCheck, NanOutsideTheSampleIsFound) {
  const Problem p = make_problem(gqa_spec());
  const std::int64_t budget = 2'500'000, D = p.spec.head_dim, Sk = p.spec.seq_k;
  const GradientSample s = gradient_sample(p.spec, budget);
  ASSERT_FALSE(contains(s.dq_rows, 1));
  ASSERT_FALSE(contains(s.kv_groups, 1));
  Tensor dq = copy_of(p.ref.dq), dv = copy_of(p.ref.dv);
  dq.data<double>()[1 * D + 7] = std::numeric_limits<double>::quiet_NaN();
  dv.data<double>()[(1 * Sk + 17) * D] = std::numeric_limits<double>::quiet_NaN();
  const GradientErrors err = check_gradients_sampled(p.spec, p.in.q, p.in.k, p.in.v, p.dout, dq, p.ref.dk, dv, budget);
  EXPECT_TRUE(std::isnan(err.dq));
  EXPECT_TRUE(std::isnan(err.dv));
  EXPECT_LT(err.dk, 1e-12);
  EXPECT_TRUE(std::isnan(err.worst()));
}

TEST(SampledGradientCheck, ScopeText) {
  GradientErrors e;
  EXPECT_EQ(e.scope(), "all rows");
  e.sampled = true;
  e.dq_rows = 4096;
  e.dq_total_rows = 262144;
  e.kv_keys = 1024;
  e.kv_total_keys = 4096;
  e.kv_groups = 2;
  e.kv_total_groups = 64;
  EXPECT_EQ(e.scope(),
            "dq on 4096 sampled rows of 262144, dk/dv on 1024 sampled keys of 4096 in 2 of 64 kv-head groups");
}

}  // namespace
}  // namespace attnprof
