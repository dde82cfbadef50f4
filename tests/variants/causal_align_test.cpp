// Issue 8, item 5: --causal-align bottom-right through every CPU variant.
// Query row i sees key j iff j <= i + (Sk − Sq). With Sq > Sk the first Sq − Sk rows see no key:
// naive and inplace give exactly NaN there (softmax of an all −inf row, as PyTorch's naive
// module), math, fused, efficient and flash give exactly 0; every other row matches the fp64
// reference. Sq < Sk and Sq = Sk are checked too (no row is fully masked there).
#include <attnprof/attention.h>
#include <attnprof/variant.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "variants/cpu_case.h"
#include "variants/reference.h"

namespace attnprof {
namespace {

struct Shape {
  std::int64_t seq_q, seq_k;
  DType dtype;
  Layout layout;
};

void PrintTo(const Shape& s, std::ostream* os) {
  *os << "Sq " << s.seq_q << ", Sk " << s.seq_k << ", " << dtype_name(s.dtype) << ", " << layout_name(s.layout);
}

const std::vector<std::string> kVariants{"naive", "inplace", "math", "fused", "efficient", "flash"};

bool gives_nan(const std::string& variant) { return variant == "naive" || variant == "inplace"; }

// Sq − Sk (the masked rows) chosen off the 64-row q-blocks and 6-row micro-tiles, and across a
// 256-key flash tile, so the tile skipping and the diagonal clamps meet partly masked blocks.
const std::vector<Shape> kShapes{
    {150, 37, DType::bf16, Layout::bhsd},   // 113 masked rows of 150
    {300, 70, DType::fp32, Layout::bshd},   // 230 masked rows: whole q-blocks and a partial one
    {70, 64, DType::fp16, Layout::bhsd},    // 6 masked rows: one micro-tile
    {64, 300, DType::fp32, Layout::bhsd},   // Sq < Sk: offset 236, nothing masked
    {33, 290, DType::bf16, Layout::bshd},   // Sq < Sk with the diagonal inside the second flash tile
    {96, 96, DType::bf16, Layout::bhsd},    // Sq = Sk: bottom-right is top-left
};

AttentionSpec spec_for(const Shape& s) {
  AttentionSpec spec;
  spec.batch = 2;
  spec.heads = 4;
  spec.kv_heads = 2;
  spec.seq_q = s.seq_q;
  spec.seq_k = s.seq_k;
  spec.head_dim = 64;
  spec.dtype = s.dtype;
  spec.layout = s.layout;
  spec.causal = true;
  spec.causal_align = CausalAlign::bottom_right;
  return spec;
}

using testing::tolerance;

float value_at(const Tensor& t, std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t d) {
  const std::int64_t offset = b * t.stride(0) + h * t.stride(1) + i * t.stride(2) + d * t.stride(3);
  switch (t.dtype()) {
    case DType::bf16: return bf16_to_float(t.data<bf16>()[offset]);
    case DType::fp16: return fp16_to_float(t.data<fp16>()[offset]);
    default: return t.data<float>()[offset];
  }
}

class BottomRight : public ::testing::TestWithParam<std::tuple<std::string, Shape>> {};

TEST_P(BottomRight, MaskedRowsFollowTheConventionOthersMatchFp64) {
  const auto& [variant_name, shape] = GetParam();
  const AttentionSpec spec = spec_for(shape);
  const AttentionInputs in = make_inputs(spec, 11);
  Variant* variant = find_variant(variant_name);
  ASSERT_NE(variant, nullptr);
  Tensor out = make_output(spec);
  variants::poison_nan(out);
  variant->prepare(spec);
  variant->forward(spec, in.q, in.k, in.v, out);
  ASSERT_EQ(variants::count_poison(out), 0) << "unwritten elements";

  const std::int64_t masked = shape.seq_q > shape.seq_k ? shape.seq_q - shape.seq_k : 0;
  ASSERT_EQ(variants::fully_masked_rows_per_head(spec), masked);
  for (std::int64_t b = 0; b < spec.batch; ++b) {
    for (std::int64_t h = 0; h < spec.heads; ++h) {
      for (std::int64_t i = 0; i < masked; ++i) {
        for (std::int64_t d = 0; d < spec.head_dim; ++d) {
          const float x = value_at(out, b, h, i, d);
          if (gives_nan(variant_name)) {
            ASSERT_TRUE(std::isnan(x)) << "row " << i << " sees no key: softmax of all −inf must be NaN, got " << x;
          } else {
            ASSERT_EQ(x, 0.0f) << "row " << i << " sees no key: the NaN-safe variants give exactly 0";
          }
        }
      }
      // The first row that sees a key is finite (it sees exactly one key when Sq > Sk: out = v[0]).
      for (std::int64_t d = 0; d < spec.head_dim; ++d) ASSERT_TRUE(std::isfinite(value_at(out, b, h, masked, d)));
    }
  }

  const variants::ErrorReport report = variants::check_against_reference(spec, in.q, in.k, in.v, out);
  EXPECT_EQ(report.masked_rows, spec.batch * spec.heads * masked);
  EXPECT_EQ(report.rows_checked, spec.batch * spec.heads * (spec.seq_q - masked));
  EXPECT_EQ(report.nan_in_defined_rows, 0);
  EXPECT_LE(report.rel_err, tolerance(spec.dtype)) << report.scope();
  if (gives_nan(variant_name)) {
    EXPECT_EQ(report.masked_rows_nan, report.masked_rows);
    EXPECT_EQ(report.nan_only_in_masked_rows(), masked > 0);
  } else {
    EXPECT_EQ(report.masked_rows_zero, report.masked_rows);
    EXPECT_EQ(report.nan_count, 0);
  }
}

std::string case_name(const ::testing::TestParamInfo<std::tuple<std::string, Shape>>& info) {
  const auto& [variant, s] = info.param;
  return fmt::format("{}_sq{}_sk{}_{}_{}", variant, s.seq_q, s.seq_k, dtype_name(s.dtype), layout_name(s.layout));
}

INSTANTIATE_TEST_SUITE_P(Cpu, BottomRight, ::testing::Combine(::testing::ValuesIn(kVariants), ::testing::ValuesIn(kShapes)),
                         case_name);

// With Sq = Sk the two alignments are one mask: bit-identical outputs.
TEST(BottomRight, EqualsTopLeftWhenSeqEqualsSeqK) {
  AttentionSpec top = spec_for({77, 77, DType::bf16, Layout::bhsd});
  top.causal_align = CausalAlign::top_left;
  AttentionSpec bottom = top;
  bottom.causal_align = CausalAlign::bottom_right;
  const AttentionInputs in = make_inputs(top, 3);
  for (const std::string& name : kVariants) {
    Variant* v = find_variant(name);
    Tensor a = make_output(top), b = make_output(bottom);
    v->prepare(top);
    v->forward(top, in.q, in.k, in.v, a);
    v->prepare(bottom);
    v->forward(bottom, in.q, in.k, in.v, b);
    ASSERT_EQ(std::memcmp(a.raw(), b.raw(), a.storage_bytes()), 0) << name;
  }
}

// A sampled check compares only sampled rows that see a key, yet classifies every masked row, and
// a NaN in a defined row outside the sample is still counted.
TEST(BottomRight, SampledReportClassifiesEveryMaskedRow) {
  const AttentionSpec spec = spec_for({300, 70, DType::fp32, Layout::bhsd});  // 230 masked rows per head
  const AttentionInputs in = make_inputs(spec, 4);
  Variant* naive = find_variant("naive");
  Tensor out = make_output(spec);
  naive->prepare(spec);
  naive->forward(spec, in.q, in.k, in.v, out);
  variants::ErrorReport report = variants::check_against_reference(spec, in.q, in.k, in.v, out, 50);
  EXPECT_TRUE(report.sampled);
  EXPECT_EQ(report.masked_rows, 8 * 230);
  EXPECT_EQ(report.masked_rows_nan, 8 * 230);
  EXPECT_GT(report.rows_checked, 0);
  EXPECT_LT(report.rows_checked, 50);  // the sampled rows inside the masked band are skipped
  EXPECT_TRUE(report.nan_only_in_masked_rows());
  EXPECT_LE(report.rel_err, 1e-5);
  EXPECT_NE(report.scope().find("of the 560 that see a key + 1840 fully masked rows"), std::string::npos)
      << report.scope();
  // row 231 of head 0 sees two keys; poison one element there (row 231 is not among the 50 sampled)
  out.data<float>()[231 * spec.head_dim + 3] = std::nanf("");
  report = variants::check_against_reference(spec, in.q, in.k, in.v, out, 50);
  EXPECT_EQ(report.nan_in_defined_rows, 1);
  EXPECT_FALSE(report.nan_only_in_masked_rows());
}

// The fp64 reference itself: row i of a bottom-right problem is the top-left-free attention of
// q_i over keys 0..i + Sk − Sq, worked out here by brute force in double.
TEST(BottomRight, ReferenceSeesKeysUpToTheShiftedDiagonal) {
  AttentionSpec spec = spec_for({9, 4, DType::fp32, Layout::bhsd});
  spec.batch = 1;
  spec.heads = spec.kv_heads = 1;
  spec.head_dim = 3;
  const AttentionInputs in = make_inputs(spec, 5);
  const Tensor ref = variants::reference_attention(spec, in.q, in.k, in.v);
  const float* q = in.q.data<float>();
  const float* k = in.k.data<float>();
  const float* v = in.v.data<float>();
  for (std::int64_t i = 0; i < spec.seq_q; ++i) {
    const std::int64_t last = i + spec.seq_k - spec.seq_q;  // the last key row i sees
    EXPECT_EQ(variants::visible_keys(spec, i), last < 0 ? 0 : last + 1);
    std::vector<double> w;
    double sum = 0;
    for (std::int64_t j = 0; j <= last; ++j) {
      double s = 0;
      for (int d = 0; d < 3; ++d) s += static_cast<double>(q[i * 3 + d]) * k[j * 3 + d];
      w.push_back(std::exp(s / std::sqrt(3.0)));
      sum += w.back();
    }
    for (int d = 0; d < 3; ++d) {
      double expected = 0;
      for (std::int64_t j = 0; j <= last; ++j) expected += w[static_cast<std::size_t>(j)] / sum * v[j * 3 + d];
      EXPECT_NEAR(ref.data<double>()[i * 3 + d], expected, 1e-12) << "row " << i;  // 0 for rows 0..4
    }
  }
}

// FLOPs: bottom-right counts the visible (i, j) pairs exactly (brute force here); top-left keeps
// the anchors' halved count.
TEST(BottomRight, FlopsCountTheVisiblePairs) {
  for (auto [sq, sk] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {4, 2}, {2, 5}, {7, 7}, {256, 64}, {64, 256}, {1, 1}, {1, 1000}, {1000, 1}, {333, 332}}) {
    AttentionSpec spec;
    spec.batch = 3;
    spec.heads = 5;
    spec.seq_q = sq;
    spec.seq_k = sk;
    spec.head_dim = 16;
    spec.causal_align = CausalAlign::bottom_right;
    double pairs = 0;
    for (std::int64_t i = 0; i < sq; ++i) {
      for (std::int64_t j = 0; j < sk; ++j) pairs += j <= i + sk - sq;
    }
    EXPECT_DOUBLE_EQ(spec.flops(), 4.0 * 3 * 5 * 16 * pairs) << sq << "x" << sk;
    spec.causal_align = CausalAlign::top_left;
    EXPECT_DOUBLE_EQ(spec.flops(), 2.0 * 3 * 5 * 16 * sq * sk);
  }
  AttentionSpec spec;
  spec.seq_q = 4;
  spec.seq_k = 2;
  spec.batch = spec.heads = spec.kv_heads = 1;
  spec.head_dim = 1;
  spec.causal_align = CausalAlign::bottom_right;
  EXPECT_DOUBLE_EQ(spec.flops(), 4.0 * 3);  // rows see 0, 0, 1, 2 keys
  EXPECT_EQ(spec.shape_string(), "1x1x4x1 seq-k 2 causal bottom-right");
  spec.causal = false;
  EXPECT_EQ(spec.causal_offset(), 0);
  EXPECT_DOUBLE_EQ(spec.flops(), 4.0 * 8);
}

}  // namespace
}  // namespace attnprof
