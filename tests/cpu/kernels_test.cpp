// Each CPU backend primitive against a scalar fp64 computation of the same thing.
#include <algorithm>
#include <attnprof/error.h>
#include <attnprof/tensor.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "cpu/cpu_backend.h"
#include "cpu/cpu_features.h"
#include "cpu/gemm.h"

namespace attnprof::cpu {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

ops::Backend& be() { return cpu_backend(); }

double get(const Tensor& t, std::vector<std::int64_t> idx) {
  std::int64_t off = 0;
  for (std::size_t d = 0; d < idx.size(); ++d) off += idx[d] * t.stride(static_cast<int>(d));
  switch (t.dtype()) {
    case DType::fp32: return t.data<float>()[off];
    case DType::fp64: return t.data<double>()[off];
    case DType::bf16: return bf16_to_float(t.data<bf16>()[off]);
    case DType::fp16: return fp16_to_float(t.data<fp16>()[off]);
    case DType::boolean: return t.data<std::uint8_t>()[off];
    case DType::int32: return t.data<std::int32_t>()[off];
  }
  return 0;
}

// A [2, 3, R, C] tensor of seeded normal values (or 0/1 for bool).
Tensor random4(std::int64_t rows, std::int64_t cols, DType dtype, std::uint64_t seed) {
  Tensor t = Tensor::empty({2, 3, rows, cols}, dtype);
  if (dtype == DType::boolean) {
    std::mt19937 g(static_cast<unsigned>(seed));
    for (std::int64_t i = 0; i < t.numel(); ++i) t.data<std::uint8_t>()[i] = g() % 3 == 0;
  } else {
    fill_normal(t, seed);
  }
  return t;
}

template <class Fn>
void for_each4(const Tensor& t, Fn fn) {
  for (std::int64_t a = 0; a < t.size(0); ++a)
    for (std::int64_t b = 0; b < t.size(1); ++b)
      for (std::int64_t i = 0; i < t.size(2); ++i)
        for (std::int64_t j = 0; j < t.size(3); ++j) fn(std::vector<std::int64_t>{a, b, i, j});
}

// Transposed view of the last two dims (a non-contiguous operand).
Tensor transposed(const Tensor& t) {
  return t.view_strided({t.size(0), t.size(1), t.size(3), t.size(2)}, {t.stride(0), t.stride(1), t.stride(3), t.stride(2)});
}

TEST(CpuKernels, CopyConvertsWithRoundToNearestEven) {
  const Tensor src = random4(5, 37, DType::fp32, 1);
  for (DType dst_dtype : {DType::bf16, DType::fp16, DType::fp64, DType::fp32}) {
    Tensor dst = Tensor::empty(src.shape(), dst_dtype);
    be().copy(dst, src);
    for_each4(src, [&](auto idx) {
      const float x = static_cast<float>(get(src, idx));
      const double want = dst_dtype == DType::bf16   ? bf16_to_float(float_to_bf16(x))
                          : dst_dtype == DType::fp16 ? fp16_to_float(float_to_fp16(x))
                                                     : x;
      ASSERT_EQ(get(dst, idx), want);
    });
  }
  // strided source, contiguous destination
  const Tensor t = transposed(src);
  Tensor dst = Tensor::empty(t.shape(), DType::bf16);
  be().copy(dst, t);
  for_each4(t, [&](auto idx) { ASSERT_EQ(get(dst, idx), bf16_to_float(float_to_bf16(static_cast<float>(get(t, idx))))); });
}

TEST(CpuKernels, FillMulAdd) {
  Tensor a = random4(4, 33, DType::fp32, 2);
  const Tensor b = random4(4, 33, DType::fp32, 3);
  Tensor filled = Tensor::empty(a.shape(), DType::bf16);
  be().fill(filled, 1.5);
  for_each4(filled, [&](auto idx) { ASSERT_EQ(get(filled, idx), 1.5); });

  Tensor product = Tensor::empty(a.shape(), DType::fp32);
  be().mul_scalar(product, a, 0.125);
  for_each4(a, [&](auto idx) { ASSERT_EQ(get(product, idx), static_cast<float>(get(a, idx) * 0.125)); });

  // add with a stride-0 broadcast row operand, in place
  const Tensor row = Tensor::empty({33}, DType::fp32);
  for (int j = 0; j < 33; ++j) row.data<float>()[j] = static_cast<float>(j);
  const Tensor wide = row.view_strided(a.shape(), {0, 0, 0, 1});
  const Tensor before = Tensor::empty(a.shape(), DType::fp32);
  Tensor copy_of_a = before;
  be().copy(copy_of_a, a);
  be().add(a, a, wide);
  for_each4(a, [&](auto idx) { ASSERT_EQ(get(a, idx), static_cast<float>(get(before, idx) + static_cast<double>(idx[3]))); });
  (void)b;
}

TEST(CpuKernels, MaskedFillWhereLogicalNotIsneginf) {
  const Tensor x = random4(6, 20, DType::bf16, 4);
  const Tensor mask = random4(6, 20, DType::boolean, 5);
  Tensor filled = Tensor::empty(x.shape(), DType::bf16);
  be().masked_fill(filled, x, mask, -kInf);
  for_each4(x, [&](auto idx) { ASSERT_EQ(get(filled, idx), get(mask, idx) ? -kInf : get(x, idx)); });

  Tensor neg = Tensor::empty(x.shape(), DType::boolean);
  be().isneginf(neg, filled);
  for_each4(x, [&](auto idx) { ASSERT_EQ(get(neg, idx), get(mask, idx)); });

  Tensor inverted = Tensor::empty(x.shape(), DType::boolean);
  be().logical_not(inverted, mask);
  for_each4(x, [&](auto idx) { ASSERT_EQ(get(inverted, idx), 1.0 - get(mask, idx)); });

  const Tensor y = random4(6, 20, DType::bf16, 6);
  Tensor chosen = Tensor::empty(x.shape(), DType::bf16);
  be().where(chosen, mask, x, y);
  for_each4(x, [&](auto idx) { ASSERT_EQ(get(chosen, idx), get(mask, idx) ? get(x, idx) : get(y, idx)); });
}

TEST(CpuKernels, TrilTriuOnBoolAndFloat) {
  for (std::int64_t diagonal : {-2, 0, 1, 3}) {
    Tensor ones = Tensor::empty({7, 11}, DType::boolean);
    be().fill(ones, 1.0);
    Tensor lower = Tensor::empty({7, 11}, DType::boolean), upper = Tensor::empty({7, 11}, DType::boolean);
    be().tril(lower, ones, diagonal);
    be().triu(upper, ones, diagonal);
    for (std::int64_t i = 0; i < 7; ++i) {
      for (std::int64_t j = 0; j < 11; ++j) {
        ASSERT_EQ(get(lower, {i, j}), j - i <= diagonal ? 1.0 : 0.0) << i << "," << j;
        ASSERT_EQ(get(upper, {i, j}), j - i >= diagonal ? 1.0 : 0.0) << i << "," << j;
      }
    }
  }
  const Tensor x = random4(5, 9, DType::fp32, 7);
  Tensor lower = Tensor::empty(x.shape(), DType::fp32);
  be().tril(lower, x, 0);
  for_each4(x, [&](auto idx) { ASSERT_EQ(get(lower, idx), idx[3] <= idx[2] ? get(x, idx) : 0.0); });
}

TEST(CpuKernels, AllLastDim) {
  Tensor m = Tensor::empty({3, 4}, DType::boolean);
  be().fill(m, 1.0);
  m.data<std::uint8_t>()[1 * 4 + 2] = 0;
  Tensor all = Tensor::empty({3, 1}, DType::boolean);
  be().all_lastdim(all, m);
  EXPECT_EQ(all.data<std::uint8_t>()[0], 1);
  EXPECT_EQ(all.data<std::uint8_t>()[1], 0);
  EXPECT_EQ(all.data<std::uint8_t>()[2], 1);
}

// softmax of one row in fp64; a row of all −inf gives NaN.
std::vector<double> softmax_row(const std::vector<double>& x) {
  double m = -kInf;
  for (double v : x) m = std::max(m, v);
  std::vector<double> y(x.size());
  double sum = 0;
  for (std::size_t i = 0; i < x.size(); ++i) sum += (y[i] = std::exp(x[i] - m));
  for (double& v : y) v /= sum;
  return y;
}

class SoftmaxTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (static_cast<int>(detected_isa()) < static_cast<int>(GetParam())) GTEST_SKIP() << "CPU lacks this ISA";
    set_isa_limit(GetParam());
  }
  void TearDown() override { set_isa_limit(Isa::avx512_amx); }
};

TEST_P(SoftmaxTest, MatchesFp64WithMaskedEntriesAndAllMaskedRow) {
  for (DType dtype : {DType::fp32, DType::bf16}) {
    Tensor x = random4(5, 77, DType::fp32, 8);
    for (int j = 0; j < 77; j += 3) x.data<float>()[77 + j] = -INFINITY;  // row 1 partly masked
    for (int j = 0; j < 77; ++j) x.data<float>()[2 * 77 + j] = -INFINITY;  // row 2 fully masked
    Tensor xs = Tensor::empty(x.shape(), dtype);
    be().copy(xs, x);
    Tensor y = Tensor::empty(x.shape(), dtype);
    be().softmax_lastdim(y, xs);
    const double tol = dtype == DType::fp32 ? 2e-6 : 8e-3;
    for (std::int64_t a = 0; a < 2; ++a) {
      for (std::int64_t b = 0; b < 3; ++b) {
        for (std::int64_t i = 0; i < 5; ++i) {
          std::vector<double> row(77);
          for (std::int64_t j = 0; j < 77; ++j) row[static_cast<std::size_t>(j)] = get(xs, {a, b, i, j});
          const std::vector<double> want = softmax_row(row);
          for (std::int64_t j = 0; j < 77; ++j) {
            const double got = get(y, {a, b, i, j});
            if (a == 0 && b == 0 && i == 2) {
              ASSERT_TRUE(std::isnan(got)) << "an all -inf row gives NaN, as PyTorch's softmax";
            } else {
              ASSERT_NEAR(got, want[static_cast<std::size_t>(j)], tol * std::max(1.0, want[static_cast<std::size_t>(j)]));
            }
          }
        }
      }
    }
  }
}

TEST_P(SoftmaxTest, ScaleMaskSoftmaxIsCausalTopLeft) {
  const Tensor x = random4(9, 13, DType::fp32, 9);  // Sq = 9 < Sk = 13
  Tensor y = Tensor::empty(x.shape(), DType::fp32);
  be().scale_mask_softmax(y, x, 0.3, true);
  for (std::int64_t a = 0; a < 2; ++a)
    for (std::int64_t b = 0; b < 3; ++b)
      for (std::int64_t i = 0; i < 9; ++i) {
        std::vector<double> row;
        for (std::int64_t j = 0; j <= i; ++j) row.push_back(0.3 * get(x, {a, b, i, j}));
        const std::vector<double> want = softmax_row(row);
        for (std::int64_t j = 0; j < 13; ++j) {
          const double expect = j <= i ? want[static_cast<std::size_t>(j)] : 0.0;
          ASSERT_NEAR(get(y, {a, b, i, j}), expect, 2e-6);
        }
      }
}

// The fused variant runs it in place on the scores (dst aliases src): same answer.
TEST_P(SoftmaxTest, ScaleMaskSoftmaxInPlaceMatchesOutOfPlace) {
  const Tensor x = random4(9, 13, DType::fp32, 11);
  Tensor expected = Tensor::empty(x.shape(), DType::fp32);
  be().scale_mask_softmax(expected, x, 0.3, true);
  Tensor in_place = Tensor::empty(x.shape(), DType::fp32);
  std::copy(x.data<float>(), x.data<float>() + x.numel(), in_place.data<float>());
  be().scale_mask_softmax(in_place, in_place, 0.3, true);
  for (std::int64_t e = 0; e < x.numel(); ++e) ASSERT_EQ(in_place.data<float>()[e], expected.data<float>()[e]) << e;
}

INSTANTIATE_TEST_SUITE_P(Cpu, SoftmaxTest, ::testing::Values(Isa::portable, Isa::avx512),
                         [](const ::testing::TestParamInfo<Isa>& info) { return isa_name(info.param); });

// dst[b,h] = alpha · a[b,h] · op(bm[b, h/g]) in fp64
double gemm_ref(const Tensor& a, const Tensor& bm, bool tb, std::int64_t b, std::int64_t h, std::int64_t i,
                std::int64_t j, double alpha) {
  const std::int64_t g = a.size(1) / bm.size(1);
  double s = 0;
  for (std::int64_t k = 0; k < a.size(3); ++k) {
    s += get(a, {b, h, i, k}) * (tb ? get(bm, {b, h / g, j, k}) : get(bm, {b, h / g, k, j}));
  }
  return alpha * s;
}

// Every GEMM path: bf16 on vdpbf16ps (avx512_bf16), bf16/fp16 through fp32 panels and sgemm
// (avx512, portable), fp32 straight to sgemm.
class GemmTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (static_cast<int>(detected_isa()) < static_cast<int>(GetParam())) GTEST_SKIP() << "CPU lacks this ISA";
    set_isa_limit(GetParam());
  }
  void TearDown() override { set_isa_limit(Isa::avx512_amx); }
};

TEST_P(GemmTest, Fp32Bf16Fp16AgainstFp64) {
  for (DType dtype : {DType::fp32, DType::bf16, DType::fp16}) {
    for (bool tb : {true, false}) {
      Tensor a = Tensor::empty({2, 4, 19, 40}, dtype);
      fill_normal(a, 10);
      Tensor bm = tb ? Tensor::empty({2, 2, 23, 40}, dtype) : Tensor::empty({2, 2, 40, 23}, dtype);
      fill_normal(bm, 11);
      // destination in the bshd layout: [2, 4, 19, 23] with rows interleaved across heads
      Tensor dst = Tensor::empty_strided({2, 4, 19, 23}, {19 * 4 * 23, 23, 4 * 23, 1}, dtype);
      be().batched_gemm(dst, a, bm, tb, 0.5f, true);
      double err2 = 0, ref2 = 0;
      for_each4(dst, [&](auto idx) {
        const double want = gemm_ref(a, bm, tb, idx[0], idx[1], idx[2], idx[3], 0.5);
        err2 += (get(dst, idx) - want) * (get(dst, idx) - want);
        ref2 += want * want;
      });
      // fp32: accumulation error only; bf16/fp16: the output rounding (2^-9 / 2^-12 relative)
      const double tol = dtype == DType::fp32 ? 1e-6 : (dtype == DType::bf16 ? 4e-3 : 6e-4);
      EXPECT_LE(std::sqrt(err2 / ref2), tol) << dtype_name(dtype) << (tb ? " transposed" : "");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cpu, GemmTest, ::testing::Values(Isa::portable, Isa::avx512, Isa::avx512_bf16),
                         [](const ::testing::TestParamInfo<Isa>& info) { return isa_name(info.param); });

TEST(CpuKernels, GemmRejectsMismatchedShapes) {
  Tensor a = Tensor::empty({1, 2, 3, 4}, DType::fp32), bm = Tensor::empty({1, 2, 5, 5}, DType::fp32);
  Tensor dst = Tensor::empty({1, 2, 3, 5}, DType::fp32);
  EXPECT_THROW(be().batched_gemm(dst, a, bm, false, 1.0f, true), Error);
}

}  // namespace
}  // namespace attnprof::cpu
