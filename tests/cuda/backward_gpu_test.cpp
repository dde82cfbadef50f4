// The backward of naive, inplace, math and fused on the GPU (their op sequences on the CUDA
// backend: cuBLASLt GEMMs, the softmax-backward and head-group-sum kernels of softmax.cu and
// elementwise.cu) against the fp64 reference gradients: ‖x − ref‖/‖ref‖ ≤ 1e-2 (bf16) or 1e-5
// (fp32) for each of dQ, dK, dV, every gradient element written (NaN-poisoned first). Shapes: odd
// Sq ≠ Sk with both causal alignments, non-causal MQA, GQA, both layouts, D 64 and 128. With
// bottom-right and Sq > Sk naive and inplace give an all-NaN dV (PyTorch's naive module does too)
// and exact dQ, dK; the others match everywhere. The kernels on their own: softmax backward with
// dst aliasing grad (fused's in-place use) and every dtype, and the head-group sum.
#include <attnprof/attention.h>
#include <attnprof/variant.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "cuda/gpu_test_util.h"
#include "cuda/gradient_check.h"
#include "variants/reference.h"
#include "variants/reference_backward.h"

using namespace attnprof;
using namespace attnprof::cuda::gpu_testing;

namespace {

const std::vector<BackwardCase> kShapes{
    {4, 2, 200, 72, 64, true, CausalAlign::bottom_right, Layout::bshd},   // 128 query rows see no key
    {4, 2, 77, 128, 128, true, CausalAlign::bottom_right, Layout::bhsd},
    {4, 4, 113, 97, 64, true, CausalAlign::top_left, Layout::bhsd},
    {4, 1, 256, 256, 128, false, CausalAlign::top_left, Layout::bshd},    // MQA, no mask
};

void check_backward(const std::string& name, DType dtype, const BackwardCase& s) {
  const AttentionSpec spec = backward_spec(s, dtype);
  Variant* variant = find_variant(name);
  ASSERT_NE(variant, nullptr) << name;
  ASSERT_FALSE(variant->backward_refusal(spec).has_value()) << name << ": " << *variant->backward_refusal(spec);
  const AttentionInputs in = make_inputs(spec, 31);
  const Tensor dout = make_output_grad(spec, 31);
  Tensor out = make_output(spec);
  AttentionGrads g = make_grads(spec);
  poison_pattern(g.dq);
  poison_pattern(g.dk);
  poison_pattern(g.dv);
  variant->prepare(spec);
  variant->forward_for_backward(spec, in.q, in.k, in.v, out);
  variant->backward(spec, in.q, in.k, in.v, out, dout, g.dq, g.dk, g.dv);
  variant->release_saved();
  gpu().synchronize();
  const Tensor dq = to_host(g.dq), dk = to_host(g.dk), dv = to_host(g.dv);
  const std::string what = name + " " + std::string(dtype_name(dtype)) + " " + spec.shape_string() + " " +
                           std::string(layout_name(spec.layout)) + (spec.causal ? " causal" : " non-causal");
  EXPECT_EQ(variants::count_poison(dq), 0) << what << ": dq elements never written";
  EXPECT_EQ(variants::count_poison(dk), 0) << what << ": dk elements never written";
  EXPECT_EQ(variants::count_poison(dv), 0) << what << ": dv elements never written";
  const variants::GradientErrors err = variants::check_gradients(spec, to_host(in.q), to_host(in.k), to_host(in.v),
                                                                 to_host(dout), dq, dk, dv);
  // fp32: math's GEMMs run in fp32 FFMA (1e-5); naive's, inplace's and fused's are cuBLASLt's TF32
  // (operands rounded to 10 mantissa bits, as their forwards: CudaGemm.Fp32WithTensorCoresAllowed...),
  // measured on the H200 at 3.6e-4..5.1e-4 relative over these shapes.
  const bool tf32 = dtype == DType::fp32 && name != "math";
  const double tol = dtype != DType::fp32 ? 1e-2 : tf32 ? 2e-3 : 1e-5;
  EXPECT_LE(err.dq, tol) << what << ": dq";
  EXPECT_LE(err.dk, tol) << what << ": dk";
  const bool blind_rows = variants::fully_masked_rows_per_head(spec) > 0;
  if (blind_rows && (name == "naive" || name == "inplace")) {
    EXPECT_EQ(variants::count_nan(dv), dv.numel()) << what << ": PyTorch's naive module's dV is all NaN here";
  } else {
    EXPECT_EQ(variants::count_nan(dv), 0) << what;
    EXPECT_LE(err.dv, tol) << what << ": dv";
  }
  std::printf("%-40s grad rel err dq %.2e dk %.2e dv %.2e\n", what.c_str(), err.dq, err.dk, err.dv);
}

TEST(BackwardGpu, OpSequenceVariantsMatchFp64Gradients) {
  ATTNPROF_REQUIRE_GPU();
  for (const char* name : {"naive", "inplace", "math", "fused"}) {
    for (DType dtype : {DType::bf16, DType::fp32}) {
      for (const BackwardCase& s : kShapes) check_backward(name, dtype, s);
    }
  }
}

// softmax backward in place (dst = grad, as fused runs it) and out of place, every dtype, rows
// short and long (the one-read kernel up to 16384 bf16 / 8192 fp32 columns, the two-pass one
// past that and for rows not whole 16-byte vectors): against the same formula in fp64 on the host.
TEST(BackwardGpu, SoftmaxBackwardKernel) {
  ATTNPROF_REQUIRE_GPU();
  for (DType dtype : {DType::bf16, DType::fp16, DType::fp32}) {
    for (std::int64_t cols : {1, 77, 1024, 4096, 8192, 16392}) {
      for (bool in_place : {false, true}) {
        const Tensor grad_h = random_host({2, 3, 5, cols}, dtype, 7);
        Tensor probs_h = random_host({2, 3, 5, cols}, dtype, 8);
        for (std::int64_t i = 0; i < probs_h.numel(); ++i) set(probs_h, i, std::fabs(get(probs_h, i)) / cols);
        Tensor grad = to_device(grad_h);
        const Tensor probs = to_device(probs_h);
        Tensor out = in_place ? grad : Tensor::empty(grad.shape(), dtype, Device::cuda);
        gpu().softmax_backward(out, grad, probs, 0.5);
        const Tensor got = to_host(out);
        // Each element within a relative tolerance of the fp64 value, plus one step of fp16's
        // subnormals (2^-24): at 4096 columns p·(g − dot) reaches 1e-8..1e-7, where fp16 keeps
        // only its subnormal spacing (the H200 run: 0.11 relative to |want| + 1e-3/cols there).
        const double rel = dtype == DType::fp32 ? 1e-4 : 2e-2;
        const double subnormal_step = dtype == DType::fp16 ? std::ldexp(1.0, -24) : 0.0;
        double worst = 0;  // the largest error as a share of what is allowed
        for (std::int64_t row = 0; row < 2 * 3 * 5; ++row) {
          double dot = 0;
          for (std::int64_t c = 0; c < cols; ++c) dot += get(grad_h, row * cols + c) * get(probs_h, row * cols + c);
          for (std::int64_t c = 0; c < cols; ++c) {
            const double p = get(probs_h, row * cols + c);
            const double want = 0.5 * p * (get(grad_h, row * cols + c) - dot);
            const double allowed = rel * (std::fabs(want) + 1e-3 / cols) + subnormal_step;
            worst = std::max(worst, std::fabs(get(got, row * cols + c) - want) / allowed);
          }
        }
        EXPECT_LE(worst, 1.0) << dtype_name(dtype) << " cols " << cols << (in_place ? " in place" : "");
      }
    }
  }
}

// The head-group sum: 6 query heads into 2 (groups of 3), bf16 into bf16 and fp32 into fp32.
TEST(BackwardGpu, HeadGroupSumKernel) {
  ATTNPROF_REQUIRE_GPU();
  for (DType dtype : {DType::bf16, DType::fp32}) {
    const Tensor src_h = random_host({2, 6, 9, 40}, dtype, 3);
    const Tensor src = to_device(src_h);
    Tensor dst = Tensor::empty({2, 2, 9, 40}, dtype, Device::cuda);
    gpu().sum_head_groups(dst, src);
    const Tensor got = to_host(dst);
    for (std::int64_t b = 0; b < 2; ++b)
      for (std::int64_t h = 0; h < 2; ++h)
        for (std::int64_t r = 0; r < 9; ++r)
          for (std::int64_t c = 0; c < 40; ++c) {
            double want = 0;
            for (std::int64_t i = 0; i < 3; ++i) want += get(src_h, offset4(src_h, b, h * 3 + i, r, c));
            const double tol = dtype == DType::fp32 ? 1e-5 : 8e-3 * (std::fabs(want) + 1);
            ASSERT_NEAR(get(got, offset4(got, b, h, r, c)), want, tol)
                << dtype_name(dtype) << " at [" << b << "," << h << "," << r << "," << c << "]";
          }
  }
}

}  // namespace
