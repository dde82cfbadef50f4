// Issue 8, item 5 on the GPU: --causal-align bottom-right through the variants on CUDA.
// Query row i sees key j iff j <= i + (Sk − Sq). With Sq > Sk the first Sq − Sk rows see no key:
// naive and inplace give exactly NaN there (softmax of an all −inf row, as PyTorch's naive module),
// math (safe softmax), fused (the scale+mask+softmax kernel), cudnn (blind rows zero-filled, the
// rest a square causal graph) and the fused kernels give exactly 0; every other row matches the
// fp64 reference (src/variants/reference.cpp, which honours the offset).
#include <attnprof/attention.h>
#include <attnprof/variant.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cuda/cudnn_sdpa.h"
#include "cuda/gpu_test_util.h"
#include "variants/reference.h"

using namespace attnprof;
using namespace attnprof::cuda::gpu_testing;

namespace {

struct Shape {
  std::int64_t seq_q, seq_k;
  Layout layout;
};

// Sq > Sk on and off the 64-row tiles, Sq < Sk with the diagonal inside a tile, and Sq = Sk.
const std::vector<Shape> kShapes{
    {256, 64, Layout::bhsd}, {200, 72, Layout::bshd}, {64, 320, Layout::bhsd}, {96, 200, Layout::bshd},
    {128, 128, Layout::bhsd},
};

AttentionSpec spec_for(const Shape& s) {
  AttentionSpec spec;
  spec.batch = 2;
  spec.heads = 4;
  spec.kv_heads = 2;
  spec.seq_q = s.seq_q;
  spec.seq_k = s.seq_k;
  spec.head_dim = 64;
  spec.dtype = DType::bf16;
  spec.layout = s.layout;
  spec.causal = true;
  spec.causal_align = CausalAlign::bottom_right;
  spec.device = Device::cuda;
  return spec;
}

void check_variant(const std::string& name, const Shape& shape) {
  const AttentionSpec spec = spec_for(shape);
  Variant* variant = find_variant(name);
  ASSERT_NE(variant, nullptr) << name;
  ASSERT_FALSE(variant->refusal(spec).has_value()) << name << ": " << *variant->refusal(spec);
  const AttentionInputs in = make_inputs(spec, 21);
  Tensor out = make_output(spec);
  poison(out);
  variant->prepare(spec);
  variant->forward(spec, in.q, in.k, in.v, out);
  gpu().synchronize();
  const Tensor q = to_host(in.q), k = to_host(in.k), v = to_host(in.v), o = to_host(out);

  const std::int64_t masked = shape.seq_q > shape.seq_k ? shape.seq_q - shape.seq_k : 0;
  const bool gives_nan = name == "naive" || name == "inplace";
  for (std::int64_t b = 0; b < spec.batch; ++b)
    for (std::int64_t h = 0; h < spec.heads; ++h)
      for (std::int64_t i = 0; i < masked; ++i)
        for (std::int64_t d = 0; d < spec.head_dim; ++d) {
          const double x = get(o, offset4(o, b, h, i, d));
          if (gives_nan) {
            ASSERT_TRUE(std::isnan(x)) << name << " row " << i << " sees no key: NaN expected, got " << x;
          } else {
            ASSERT_EQ(x, 0.0) << name << " row " << i << " sees no key: 0 expected";
          }
        }
  const variants::ErrorReport report = variants::check_against_reference(spec, q, k, v, o);
  EXPECT_EQ(report.masked_rows, spec.batch * spec.heads * masked) << name;
  EXPECT_EQ(report.nan_in_defined_rows, 0) << name;
  EXPECT_LE(report.rel_err, 1e-2) << name << " " << report.scope();
  std::printf("%-9s Sq=%-4lld Sk=%-4lld %s bottom-right: rel err %.2e over %s; masked rows %lld (NaN %lld, zero %lld)\n",
              name.c_str(), static_cast<long long>(shape.seq_q), static_cast<long long>(shape.seq_k),
              shape.layout == Layout::bhsd ? "bhsd" : "bshd", report.rel_err, report.scope().c_str(),
              static_cast<long long>(report.masked_rows), static_cast<long long>(report.masked_rows_nan),
              static_cast<long long>(report.masked_rows_zero));
}

// The scale+mask+softmax kernel (fused's) with causal offsets in every launch configuration (one
// warp per row, a block per row, the 3-pass fallback past 32768 columns): rows that keep no column
// are exactly 0, the others match fp64 within half an ulp of the dtype (plus fp32 noise).
TEST(BottomRightGpu, ScaleMaskSoftmaxOffsetsInEveryLaunchConfiguration) {
  ATTNPROF_REQUIRE_GPU();
  for (DType dtype : {DType::bf16, DType::fp32}) {
    for (std::int64_t cols : {77, 1024, 4096, 16384, 40000}) {
      const std::int64_t rows = cols > 4096 ? 5 : 37;
      const Tensor host = random_host({1, 1, rows, cols}, dtype, 31 + cols);
      const Tensor src = to_device(host);
      for (std::int64_t offset : std::vector<std::int64_t>{-(rows - 2), -3, 0, cols / 2}) {
        Tensor out = Tensor::empty(host.shape(), dtype, Device::cuda);
        gpu().scale_mask_softmax(out, src, 0.125, true, offset);
        const Tensor got = to_host(out);
        double worst = 0.0;
        for (std::int64_t r = 0; r < rows; ++r) {
          const std::int64_t kept = std::clamp<std::int64_t>(r + 1 + offset, 0, cols);
          double mx = -INFINITY, sum = 0.0;
          for (std::int64_t c = 0; c < kept; ++c) mx = std::max(mx, get(host, r * cols + c) * 0.125);
          for (std::int64_t c = 0; c < kept; ++c) sum += std::exp(get(host, r * cols + c) * 0.125 - mx);
          for (std::int64_t c = 0; c < cols; ++c) {
            const double x = get(got, r * cols + c);
            if (kept == 0) {
              ASSERT_EQ(x, 0.0) << "row " << r << " keeps no column (offset " << offset << ", cols " << cols << ")";
              continue;
            }
            const double want = c < kept ? std::exp(get(host, r * cols + c) * 0.125 - mx) / sum : 0.0;
            worst = std::max(worst, want > 1e-30 ? std::abs(x - want) / want : std::abs(x));
          }
        }
        EXPECT_LE(worst, dtype == DType::bf16 ? 1.0 / 256 + 1e-5 : 2e-5)
            << dtype_name(dtype) << " cols " << cols << " offset " << offset;
      }
    }
  }
}

TEST(BottomRightGpu, ComposedVariants) {
  ATTNPROF_REQUIRE_GPU();
  for (const char* name : {"naive", "inplace", "math", "fused"})
    for (const Shape& shape : kShapes) check_variant(name, shape);
}

TEST(BottomRightGpu, Cudnn) {
  ATTNPROF_REQUIRE_GPU();
  for (const Shape& shape : kShapes) check_variant("cudnn", shape);
}

// The fused kernels read FusedAttentionArgs::causal_offset (set from spec.causal_offset() in the
// backend); the kernel side lives in src/cuda/attention_kernel.cuh.
TEST(BottomRightGpu, FusedKernels) {
  ATTNPROF_REQUIRE_GPU();
  for (const char* name : {"efficient", "flash"})
    for (const Shape& shape : kShapes) check_variant(name, shape);
}

// cuDNN's plan cache keys on the causal offset: the same shape top-left and bottom-right are two
// plans, and each gives its own mask's answer.
TEST(BottomRightGpu, CudnnPlansDifferByAlignment) {
  ATTNPROF_REQUIRE_GPU();
  AttentionSpec bottom = spec_for({64, 320, Layout::bhsd});
  AttentionSpec top = bottom;
  top.causal_align = CausalAlign::top_left;
  const AttentionInputs in = make_inputs(top, 5);
  const Tensor q = to_host(in.q), k = to_host(in.k), v = to_host(in.v);
  for (const AttentionSpec& spec : {top, bottom, top}) {
    Tensor out = make_output(spec);
    poison(out);
    const cuda::CudnnPlanInfo info = cuda::cudnn_sdpa_forward(spec, out, in.q, in.k, in.v, nullptr, cuda::backend_stream());
    gpu().synchronize();
    EXPECT_EQ(info.graph.find("bottom-right") != std::string::npos, spec.causal_align == CausalAlign::bottom_right)
        << info.graph;
    const variants::ErrorReport report = variants::check_against_reference(spec, q, k, v, to_host(out));
    EXPECT_EQ(report.nan_count, 0);
    EXPECT_LE(report.rel_err, 1e-2) << info.graph;
  }
}

// The LSE of a sliced cuDNN problem: −inf on the blind rows, the fp64 log-sum-exp elsewhere.
void check_cudnn_lse(const Shape& shape) {
  const AttentionSpec spec = spec_for(shape);
  const AttentionInputs in = make_inputs(spec, 9);
  Tensor out = make_output(spec);
  Tensor lse = Tensor::empty({spec.batch, spec.heads, spec.seq_q}, DType::fp32, Device::cuda);
  poison(lse);
  cuda::cudnn_sdpa_forward(spec, out, in.q, in.k, in.v, &lse, cuda::backend_stream());
  gpu().synchronize();
  const Tensor lse_host = to_host(lse), q = to_host(in.q), k = to_host(in.k);
  const double scale = spec.softmax_scale();
  for (std::int64_t h = 0; h < spec.heads; ++h) {
    for (std::int64_t i = 0; i < spec.seq_q; ++i) {
      const double got = get(lse_host, h * spec.seq_q + i);  // batch 0
      const std::int64_t visible = variants::visible_keys(spec, i);
      if (visible == 0) {
        ASSERT_TRUE(std::isinf(got) && got < 0) << "row " << i << ": " << got;
        continue;
      }
      double mx = -INFINITY, sum = 0;
      std::vector<double> s(static_cast<std::size_t>(visible));
      for (std::int64_t j = 0; j < visible; ++j) {
        double dot = 0;
        for (std::int64_t d = 0; d < spec.head_dim; ++d)
          dot += get(q, offset4(q, 0, h, i, d)) * get(k, offset4(k, 0, h / 2, j, d));
        s[static_cast<std::size_t>(j)] = dot * scale;
        mx = std::max(mx, dot * scale);
      }
      for (double x : s) sum += std::exp(x - mx);
      ASSERT_NEAR(got, mx + std::log(sum), 1e-3) << "row " << i;
    }
  }
}

// 128 blind rows: the LSE rows cuDNN writes start 512 bytes in, 16-byte aligned.
TEST(BottomRightGpu, CudnnLseOfBlindRowsIsMinusInf) {
  ATTNPROF_REQUIRE_GPU();
  check_cudnn_lse({200, 72, Layout::bhsd});
}

// 63 blind rows: the LSE rows start 252 bytes in, so the Stats tensor declares 4-byte alignment.
TEST(BottomRightGpu, CudnnLseWithUnalignedBlindRows) {
  ATTNPROF_REQUIRE_GPU();
  check_cudnn_lse({100, 37, Layout::bshd});
}

}  // namespace
