// The fp64 gradient reference against an independent oracle: central finite differences of the
// fp64 forward reference's scalar loss L = Σ out·dout, on tiny shapes (GQA, MQA, causal both
// alignments, Sq ≠ Sk, fully masked rows), and a 1×1×2×2 case worked out by hand.
#include <attnprof/attention.h>
#include <attnprof/error.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "variants/reference.h"
#include "variants/reference_backward.h"

namespace attnprof {
namespace {

using variants::check_gradients;
using variants::reference_attention;
using variants::reference_gradients;

Tensor random_fp64(std::vector<std::int64_t> shape, std::uint64_t seed) {
  Tensor t = Tensor::empty(std::move(shape), DType::fp64, Device::cpu);
  fill_normal(t, seed);
  return t;
}

double loss(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& dout) {
  const Tensor out = reference_attention(spec, q, k, v);
  double sum = 0;
  for (std::int64_t n = 0; n < out.numel(); ++n) sum += out.data<double>()[n] * dout.data<double>()[n];
  return sum;
}

// dL/dx[n] for every element of x by central differences, x perturbed in place and restored.
std::vector<double> finite_differences(const AttentionSpec& spec, Tensor& x, const Tensor& q, const Tensor& k,
                                       const Tensor& v, const Tensor& dout) {
  constexpr double kStep = 1e-5;
  std::vector<double> grad(static_cast<std::size_t>(x.numel()));
  for (std::int64_t n = 0; n < x.numel(); ++n) {
    double& xn = x.data<double>()[n];
    const double saved = xn;
    xn = saved + kStep;
    const double up = loss(spec, q, k, v, dout);
    xn = saved - kStep;
    const double down = loss(spec, q, k, v, dout);
    xn = saved;
    grad[static_cast<std::size_t>(n)] = (up - down) / (2 * kStep);
  }
  return grad;
}

void expect_matches(const Tensor& analytic, const std::vector<double>& numeric, const char* what) {
  ASSERT_EQ(analytic.numel(), static_cast<std::int64_t>(numeric.size())) << what;
  for (std::int64_t n = 0; n < analytic.numel(); ++n) {
    const double a = analytic.data<double>()[n], fd = numeric[static_cast<std::size_t>(n)];
    EXPECT_NEAR(a, fd, 1e-7 * (1 + std::abs(fd))) << what << " element " << n;
  }
}

struct Shape {
  std::int64_t batch, heads, kv_heads, seq_q, seq_k, head_dim;
  bool causal;
  CausalAlign align;
};

class ReferenceGradientsFiniteDifference : public testing::TestWithParam<Shape> {};

TEST_P(ReferenceGradientsFiniteDifference, MatchesCentralDifferencesOfTheForwardLoss) {
  const Shape s = GetParam();
  const AttentionSpec spec{.batch = s.batch, .heads = s.heads, .kv_heads = s.kv_heads, .seq_q = s.seq_q,
                           .seq_k = s.seq_k, .head_dim = s.head_dim, .dtype = DType::fp32, .causal = s.causal,
                           .causal_align = s.align};
  Tensor q = random_fp64({s.batch, s.heads, s.seq_q, s.head_dim}, 11);
  Tensor k = random_fp64({s.batch, s.kv_heads, s.seq_k, s.head_dim}, 12);
  Tensor v = random_fp64({s.batch, s.kv_heads, s.seq_k, s.head_dim}, 13);
  Tensor dout = random_fp64({s.batch, s.heads, s.seq_q, s.head_dim}, 14);

  const auto g = reference_gradients(spec, q, k, v, dout);
  EXPECT_EQ(g.dq.shape(), q.shape());
  EXPECT_EQ(g.dk.shape(), k.shape());
  EXPECT_EQ(g.dv.shape(), v.shape());
  expect_matches(g.dq, finite_differences(spec, q, q, k, v, dout), "dq");
  expect_matches(g.dk, finite_differences(spec, k, q, k, v, dout), "dk");
  expect_matches(g.dv, finite_differences(spec, v, q, k, v, dout), "dv");

  // Rows that see no key: exactly zero in dq (their out is the constant 0).
  const std::int64_t masked = variants::fully_masked_rows_per_head(spec);
  for (std::int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (std::int64_t i = 0; i < masked; ++i)
      for (std::int64_t d = 0; d < s.head_dim; ++d)
        EXPECT_EQ(g.dq.data<double>()[(bh * s.seq_q + i) * s.head_dim + d], 0.0) << "masked row " << i;
}

INSTANTIATE_TEST_SUITE_P(
    TinyShapes, ReferenceGradientsFiniteDifference,
    testing::Values(Shape{1, 1, 1, 1, 1, 2, false, CausalAlign::top_left},
                    Shape{1, 2, 2, 3, 3, 4, false, CausalAlign::top_left},
                    Shape{2, 4, 2, 3, 5, 3, false, CausalAlign::top_left},        // GQA, Sq < Sk
                    Shape{1, 3, 1, 4, 4, 3, true, CausalAlign::top_left},         // MQA, causal
                    Shape{1, 4, 2, 3, 5, 3, true, CausalAlign::top_left},         // causal, Sq < Sk
                    Shape{1, 4, 2, 5, 3, 3, true, CausalAlign::top_left},         // causal, Sq > Sk
                    Shape{1, 4, 2, 3, 5, 3, true, CausalAlign::bottom_right},     // bottom-right, Sq < Sk
                    Shape{2, 2, 1, 5, 3, 2, true, CausalAlign::bottom_right}),    // two fully masked rows
    [](const testing::TestParamInfo<Shape>& info) {
      const Shape& s = info.param;
      return fmt::format("b{}h{}kv{}_sq{}_sk{}_d{}_{}", s.batch, s.heads, s.kv_heads, s.seq_q, s.seq_k, s.head_dim,
                         !s.causal ? "full" : s.align == CausalAlign::top_left ? "topleft" : "bottomright");
    });

// B = H = 1, Sq = Sk = D = 2, not causal, scale 1/√2. q_0 = q_1 = (√2·ln 3, 0), k_0 = (0, 0),
// k_1 = (1, 0) give scores (0, ln 3) in both rows, so p = (1/4, 3/4). v_0 = (1, 2), v_1 = (3, 4),
// dout_0 = (1, 0), dout_1 = (0, 1):
//   row 0: dP = (1, 3), Δ = 1/4 + 9/4 = 5/2, dS = (1/4·(−3/2), 3/4·(1/2)) = (−3/8, 3/8)
//   row 1: dP = (2, 4), Δ = 2/4 + 12/4 = 7/2, dS = (−3/8, 3/8)
//   dq_i = scale·Σ_j dS_ij·k_j = (3/(8√2), 0) for both rows
//   dk_j = scale·Σ_i dS_ij·q_i = (dS_0j + dS_1j)·(ln 3, 0): dk_0 = (−3/4·ln 3, 0), dk_1 = (3/4·ln 3, 0)
//   dv_j = Σ_i p_ij·dout_i: dv_0 = (1/4, 1/4), dv_1 = (3/4, 3/4)
TEST(ReferenceGradients, HandWorkedTwoByTwo) {
  const AttentionSpec spec{.batch = 1, .heads = 1, .kv_heads = 1, .seq_q = 2, .seq_k = 2, .head_dim = 2,
                           .dtype = DType::fp32, .causal = false};
  const double a = std::sqrt(2.0) * std::log(3.0);
  auto make = [](std::vector<double> values) {
    Tensor t = Tensor::empty({1, 1, 2, 2}, DType::fp64, Device::cpu);
    for (std::size_t n = 0; n < values.size(); ++n) t.data<double>()[n] = values[n];
    return t;
  };
  const Tensor q = make({a, 0, a, 0}), k = make({0, 0, 1, 0}), v = make({1, 2, 3, 4}), dout = make({1, 0, 0, 1});
  const auto g = reference_gradients(spec, q, k, v, dout);
  const double dq = 3.0 / (8.0 * std::sqrt(2.0)), dk = 0.75 * std::log(3.0);
  const std::vector<double> want_dq{dq, 0, dq, 0}, want_dk{-dk, 0, dk, 0}, want_dv{0.25, 0.25, 0.75, 0.75};
  for (std::size_t n = 0; n < 4; ++n) {
    EXPECT_NEAR(g.dq.data<double>()[n], want_dq[n], 1e-14) << "dq " << n;
    EXPECT_NEAR(g.dk.data<double>()[n], want_dk[n], 1e-14) << "dk " << n;
    EXPECT_NEAR(g.dv.data<double>()[n], want_dv[n], 1e-14) << "dv " << n;
  }
}

// check_gradients reads any strides and dtype: the reference itself, copied into a bshd-strided
// fp32 tensor, is off by fp32 rounding only; one element moved by a known amount gives exactly
// that relative error; a NaN makes the error NaN.
TEST(CheckGradients, RelativeErrorOverStridedTensors) {
  const AttentionSpec spec{.batch = 1, .heads = 2, .kv_heads = 1, .seq_q = 3, .seq_k = 4, .head_dim = 2,
                           .dtype = DType::fp32, .causal = true};
  const Tensor q = random_fp64({1, 2, 3, 2}, 1), k = random_fp64({1, 1, 4, 2}, 2), v = random_fp64({1, 1, 4, 2}, 3);
  const Tensor dout = random_fp64({1, 2, 3, 2}, 4);
  const auto ref = reference_gradients(spec, q, k, v, dout);
  auto bshd_fp32 = [](const Tensor& src) {
    const std::int64_t B = src.size(0), H = src.size(1), S = src.size(2), D = src.size(3);
    Tensor t = Tensor::empty_strided({B, H, S, D}, {S * H * D, D, H * D, 1}, DType::fp32, Device::cpu);
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t s = 0; s < S; ++s)
        for (std::int64_t d = 0; d < D; ++d)
          t.data<float>()[s * H * D + h * D + d] = static_cast<float>(src.data<double>()[(h * S + s) * D + d]);
    return t;
  };
  Tensor dq = bshd_fp32(ref.dq), dk = bshd_fp32(ref.dk), dv = bshd_fp32(ref.dv);
  const auto close = check_gradients(spec, q, k, v, dout, dq, dk, dv);
  EXPECT_LT(close.worst(), 1e-7);
  EXPECT_GT(close.worst(), 0.0);  // fp32 rounding is visible

  double norm2 = 0;
  for (std::int64_t n = 0; n < ref.dv.numel(); ++n) norm2 += ref.dv.data<double>()[n] * ref.dv.data<double>()[n];
  Tensor dv_exact = Tensor::empty({1, 1, 4, 2}, DType::fp64, Device::cpu);
  for (std::int64_t n = 0; n < 8; ++n) dv_exact.data<double>()[n] = ref.dv.data<double>()[n];
  dv_exact.data<double>()[5] += 0.5;
  const auto moved = check_gradients(spec, q, k, v, dout, ref.dq, ref.dk, dv_exact);
  EXPECT_EQ(moved.dq, 0.0);
  EXPECT_EQ(moved.dk, 0.0);
  EXPECT_NEAR(moved.dv, 0.5 / std::sqrt(norm2), 1e-12);
  EXPECT_EQ(moved.worst(), moved.dv);

  dk.data<float>()[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(check_gradients(spec, q, k, v, dout, dq, dk, dv).worst()));
  EXPECT_THROW(check_gradients(spec, q, k, v, dout, dk, dk, dv), Error);  // dq given dk's shape
}

}  // namespace
}  // namespace attnprof
