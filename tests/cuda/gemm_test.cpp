// cuBLASLt batched GEMMs against fp64 products of the same rounded inputs.
#include <gtest/gtest.h>

#include <cmath>

#include "cuda/gpu_test_util.h"

using namespace attnprof;
using namespace attnprof::cuda::gpu_testing;

namespace {

struct Case {
  DType dtype;
  std::int64_t B, H, Hb, M, N, K;
  bool transpose_b;
  bool bshd_a;        // a is a [B,S,H,D]-strided view
  bool tensor_cores;
  double alpha;
  double tolerance;   // relative Frobenius error
};

double run_case(const Case& c) {
  Tensor a_host = random_host({c.B, c.H, c.M, c.K}, c.dtype, 21);
  Tensor b_host = c.transpose_b ? random_host({c.B, c.Hb, c.N, c.K}, c.dtype, 22)
                                : random_host({c.B, c.Hb, c.K, c.N}, c.dtype, 22);
  Tensor a_dev;
  if (c.bshd_a) {
    // Same logical [B,H,M,K], stored [B,M,H,K].
    Tensor store_host = Tensor::empty({c.B, c.M, c.H, c.K}, c.dtype, Device::cpu);
    for (std::int64_t b = 0; b < c.B; ++b)
      for (std::int64_t h = 0; h < c.H; ++h)
        for (std::int64_t m = 0; m < c.M; ++m)
          for (std::int64_t k = 0; k < c.K; ++k)
            set(store_host, ((b * c.M + m) * c.H + h) * c.K + k, get(a_host, offset4(a_host, b, h, m, k)));
    Tensor store = to_device(store_host);
    a_dev = store.view_strided({c.B, c.H, c.M, c.K}, {c.M * c.H * c.K, c.K, c.H * c.K, 1});
  } else {
    a_dev = to_device(a_host);
  }
  Tensor b_dev = to_device(b_host);
  Tensor d = Tensor::empty({c.B, c.H, c.M, c.N}, c.dtype, Device::cuda);
  gpu().batched_gemm(d, a_dev, b_dev, c.transpose_b, static_cast<float>(c.alpha), c.tensor_cores);
  Tensor got = to_host(d);
  double err2 = 0.0, ref2 = 0.0;
  const std::int64_t group = c.H / c.Hb;
  for (std::int64_t b = 0; b < c.B; ++b)
    for (std::int64_t h = 0; h < c.H; ++h)
      for (std::int64_t m = 0; m < c.M; ++m)
        for (std::int64_t n = 0; n < c.N; ++n) {
          double sum = 0.0;
          for (std::int64_t k = 0; k < c.K; ++k) {
            double bv = c.transpose_b ? get(b_host, offset4(b_host, b, h / group, n, k))
                                      : get(b_host, offset4(b_host, b, h / group, k, n));
            sum += get(a_host, offset4(a_host, b, h, m, k)) * bv;
          }
          sum *= c.alpha;
          double diff = get(got, offset4(got, b, h, m, n)) - sum;
          err2 += diff * diff;
          ref2 += sum * sum;
        }
  return std::sqrt(err2 / ref2);
}

}  // namespace

TEST(CudaGemm, MatchesFp64) {
  ATTNPROF_REQUIRE_GPU();
  const Case cases[] = {
      {DType::bf16, 2, 4, 4, 77, 113, 64, true, false, true, 0.125, 5e-3},    // q·kᵀ, scaled
      {DType::fp16, 2, 4, 4, 64, 64, 128, false, false, true, 1.0, 1e-3},     // p·v
      {DType::bf16, 2, 8, 2, 33, 40, 64, true, false, true, 1.0, 5e-3},       // GQA, heads folded into M
      {DType::bf16, 2, 4, 2, 17, 64, 64, false, true, true, 1.0, 5e-3},       // GQA with a bshd view: a loop of calls
      {DType::bf16, 3, 4, 4, 65, 31, 64, true, true, true, 1.0, 5e-3},        // bshd view: one call per batch
      {DType::fp32, 2, 4, 4, 100, 90, 256, true, false, false, 1.0, 1e-6},    // FFMA: no TF32 rounding
  };
  for (const Case& c : cases) {
    double err = run_case(c);
    EXPECT_LE(err, c.tolerance) << dtype_name(c.dtype) << " B" << c.B << " H" << c.H << " Hb" << c.Hb << " M" << c.M
                                << " N" << c.N << " K" << c.K;
  }
}

// TF32 rounds operands to 10 mantissa bits: a relative error near 1e-4..1e-3 that the FFMA path
// (allow_tensor_cores=false) must not show. This guards the math variant's "off the tensor cores".
TEST(CudaGemm, Fp32WithTensorCoresAllowedIsTf32AndWithoutIsExactish) {
  ATTNPROF_REQUIRE_GPU();
  Case tf32{DType::fp32, 1, 2, 2, 128, 128, 512, true, false, true, 1.0, 1.0};
  Case ffma = tf32;
  ffma.tensor_cores = false;
  double err_tf32 = run_case(tf32), err_ffma = run_case(ffma);
  EXPECT_LE(err_ffma, 1e-6);
  EXPECT_GT(err_tf32, 1e-5) << "expected TF32 rounding when tensor cores are allowed";
}
