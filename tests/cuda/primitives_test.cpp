// The primitive kernels against host references computed in fp64 from the same (rounded) inputs.
// Shapes include odd last dims (1, 77, 113, 1023) that take the scalar path next to vectorised ones.
#include <attnprof/error.h>
#include <attnprof/memory.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cuda/gpu_test_util.h"

using namespace attnprof;
using namespace attnprof::cuda::gpu_testing;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Round a double through a dtype (what a kernel writing that dtype must produce exactly).
double rounded(double v, DType dtype) {
  Tensor t = Tensor::empty({1}, dtype, Device::cpu);
  set(t, 0, v);
  return get(t, 0);
}

void expect_exact(const Tensor& host, const std::vector<double>& want, const char* what) {
  ASSERT_EQ(host.numel(), static_cast<std::int64_t>(want.size()));
  std::int64_t mismatches = 0;
  for (std::int64_t i = 0; i < host.numel(); ++i) {
    double got = get(host, i), w = want[static_cast<std::size_t>(i)];
    bool same = (std::isnan(got) && std::isnan(w)) || got == w;
    if (!same && ++mismatches < 5) ADD_FAILURE() << what << " at " << i << ": got " << got << " want " << w;
  }
  EXPECT_EQ(mismatches, 0) << what;
}

// A bool [S, S] mask broadcast to [B, H, S, S] with stride-0 views, as the naive variant makes it.
Tensor broadcast_mask(const Tensor& mask2d, std::int64_t b, std::int64_t h) {
  std::int64_t s0 = mask2d.size(0), s1 = mask2d.size(1);
  return mask2d.view_strided({b, h, s0, s1}, {0, 0, mask2d.stride(0), mask2d.stride(1)});
}

}  // namespace

TEST(CudaPrimitives, HostDeviceRoundTripIsExact) {
  ATTNPROF_REQUIRE_GPU();
  for (DType dtype : {DType::bf16, DType::fp16, DType::fp32, DType::boolean}) {
    Tensor host = random_host({3, 5, 77}, dtype, 1);
    Tensor back = to_host(to_device(host));
    std::vector<double> want(static_cast<std::size_t>(host.numel()));
    for (std::int64_t i = 0; i < host.numel(); ++i) want[static_cast<std::size_t>(i)] = get(host, i);
    expect_exact(back, want, dtype_name(dtype).data());
  }
}

TEST(CudaPrimitives, ConvertRoundsToNearestEven) {
  ATTNPROF_REQUIRE_GPU();
  for (auto [from, to] : {std::pair{DType::fp32, DType::bf16}, std::pair{DType::bf16, DType::fp32},
                          std::pair{DType::fp32, DType::fp16}, std::pair{DType::fp16, DType::bf16}}) {
    for (std::int64_t cols : {64, 113}) {
      Tensor host = random_host({2, 3, 17, cols}, from, 2);
      Tensor src = to_device(host);
      Tensor dst = Tensor::empty(host.shape(), to, Device::cuda);
      gpu().copy(dst, src);
      std::vector<double> want;
      for (std::int64_t i = 0; i < host.numel(); ++i) want.push_back(rounded(get(host, i), to));
      expect_exact(to_host(dst), want, "convert");
    }
  }
}

TEST(CudaPrimitives, StridedCopyMakesContiguous) {
  ATTNPROF_REQUIRE_GPU();
  Tensor host = random_host({2, 4, 33, 64}, DType::bf16, 3);
  Tensor dev = to_device(host);
  // The [B, S, H, D] view of a [B, H, S, D] buffer, copied into contiguous [B, S, H, D].
  Tensor view = dev.view_strided({2, 33, 4, 64}, {4 * 33 * 64, 64, 33 * 64, 1});
  Tensor dst = Tensor::empty({2, 33, 4, 64}, DType::bf16, Device::cuda);
  gpu().copy(dst, view);
  std::vector<double> want;
  for (int b = 0; b < 2; ++b)
    for (int s = 0; s < 33; ++s)
      for (int h = 0; h < 4; ++h)
        for (int d = 0; d < 64; ++d) want.push_back(get(host, offset4(host, b, h, s, d)));
  expect_exact(to_host(dst), want, "strided copy");
}

TEST(CudaPrimitives, MaskedFillOutOfPlaceAndInPlaceWithBroadcastMask) {
  ATTNPROF_REQUIRE_GPU();
  for (std::int64_t s : {128, 113}) {
    Tensor host = random_host({2, 3, s, s}, DType::bf16, 4);
    Tensor mask_host = random_host({s, s}, DType::boolean, 5);
    Tensor src = to_device(host);
    Tensor mask = broadcast_mask(to_device(mask_host), 2, 3);
    std::vector<double> want;
    for (std::int64_t i = 0; i < host.numel(); ++i) {
      std::int64_t r = (i / s) % s, c = i % s;
      want.push_back(get(mask_host, r * s + c) != 0 ? -kInf : get(host, i));
    }
    Tensor out = Tensor::empty(host.shape(), DType::bf16, Device::cuda);
    gpu().masked_fill(out, src, mask, -kInf);
    expect_exact(to_host(out), want, "masked_fill");
    gpu().masked_fill(src, src, mask, -kInf);  // in place: dst aliases src
    expect_exact(to_host(src), want, "masked_fill_");
  }
}

TEST(CudaPrimitives, ElementwiseOpsMatchTheirDefinitions) {
  ATTNPROF_REQUIRE_GPU();
  const std::vector<std::int64_t> shape{3, 2, 5, 77};
  Tensor a_host = random_host(shape, DType::fp32, 6), b_host = random_host(shape, DType::fp32, 7);
  Tensor m_host = random_host(shape, DType::boolean, 8);
  set(a_host, 3, -kInf);
  Tensor a = to_device(a_host), b = to_device(b_host), m = to_device(m_host);
  const std::int64_t n = a_host.numel();
  auto want_of = [&](auto fn) {
    std::vector<double> w;
    for (std::int64_t i = 0; i < n; ++i) w.push_back(fn(i));
    return w;
  };
  Tensor out = Tensor::empty(shape, DType::fp32, Device::cuda);
  gpu().mul_scalar(out, a, 0.125);
  expect_exact(to_host(out), want_of([&](std::int64_t i) { return rounded(get(a_host, i) * 0.125, DType::fp32); }), "mul");
  gpu().add(out, a, b);
  expect_exact(to_host(out), want_of([&](std::int64_t i) { return rounded(get(a_host, i) + get(b_host, i), DType::fp32); }),
               "add");
  gpu().where(out, m, a, b);
  expect_exact(to_host(out), want_of([&](std::int64_t i) { return get(m_host, i) ? get(a_host, i) : get(b_host, i); }),
               "where");
  gpu().fill(out, -2.5);
  expect_exact(to_host(out), want_of([](std::int64_t) { return -2.5; }), "fill");
  Tensor flags = Tensor::empty(shape, DType::boolean, Device::cuda);
  gpu().isneginf(flags, a);
  expect_exact(to_host(flags), want_of([&](std::int64_t i) { return get(a_host, i) == -kInf ? 1.0 : 0.0; }), "isneginf");
  gpu().logical_not(flags, m);
  expect_exact(to_host(flags), want_of([&](std::int64_t i) { return get(m_host, i) ? 0.0 : 1.0; }), "logical_not");
}

TEST(CudaPrimitives, TrilAndTriuKeepTheirTriangle) {
  ATTNPROF_REQUIRE_GPU();
  for (DType dtype : {DType::boolean, DType::bf16}) {
    for (std::int64_t diagonal : {0, 1, -2}) {
      Tensor host = random_host({1, 1, 19, 40}, dtype, 9);
      Tensor src = to_device(host);
      Tensor lower = Tensor::empty(host.shape(), dtype, Device::cuda), upper = Tensor::empty(host.shape(), dtype, Device::cuda);
      gpu().tril(lower, src, diagonal);
      gpu().triu(upper, src, diagonal);
      std::vector<double> want_lower, want_upper;
      for (std::int64_t r = 0; r < 19; ++r)
        for (std::int64_t c = 0; c < 40; ++c) {
          double v = get(host, r * 40 + c);
          want_lower.push_back(c - r <= diagonal ? v : 0.0);
          want_upper.push_back(c - r >= diagonal ? v : 0.0);
        }
      expect_exact(to_host(lower), want_lower, "tril");
      expect_exact(to_host(upper), want_upper, "triu");
    }
  }
}

TEST(CudaPrimitives, AllOverTheLastDim) {
  ATTNPROF_REQUIRE_GPU();
  Tensor host = random_host({2, 3, 7, 50}, DType::boolean, 10);
  for (std::int64_t c = 0; c < 50; ++c) set(host, c, 1.0);  // row 0 all true
  Tensor out = Tensor::empty({2, 3, 7, 1}, DType::boolean, Device::cuda);
  gpu().all_lastdim(out, to_device(host));
  std::vector<double> want;
  for (std::int64_t r = 0; r < 42; ++r) {
    bool all = true;
    for (std::int64_t c = 0; c < 50; ++c) all = all && get(host, r * 50 + c) != 0;
    want.push_back(all ? 1.0 : 0.0);
  }
  EXPECT_EQ(want[0], 1.0);
  expect_exact(to_host(out), want, "all");
}

// Softmax over rows of many lengths (every launch configuration, including the 3-pass fallback
// past 32768 columns) against fp64; error bound: half an ulp of the output dtype plus fp32 noise.
TEST(CudaPrimitives, SoftmaxAndScaleMaskSoftmaxMatchFp64) {
  ATTNPROF_REQUIRE_GPU();
  for (DType dtype : {DType::bf16, DType::fp32}) {
    for (std::int64_t cols : {1, 77, 256, 1023, 1024, 4096, 16384, 40000}) {
      const std::int64_t rows = cols > 4096 ? 3 : 37;
      Tensor host = random_host({1, 1, rows, cols}, dtype, 11 + cols);
      Tensor src = to_device(host);
      for (bool fused : {false, true}) {
        const double scale = fused ? 0.125 : 1.0;
        Tensor out = Tensor::empty(host.shape(), dtype, Device::cuda);
        if (fused) {
          gpu().scale_mask_softmax(out, src, scale, true);
        } else {
          gpu().softmax_lastdim(out, src);
        }
        Tensor got = to_host(out);
        double worst = 0.0;
        for (std::int64_t r = 0; r < rows; ++r) {
          const std::int64_t kept = fused ? std::min(cols, r + 1) : cols;
          double mx = -kInf, sum = 0.0;
          for (std::int64_t c = 0; c < kept; ++c) mx = std::max(mx, get(host, r * cols + c) * scale);
          for (std::int64_t c = 0; c < kept; ++c) sum += std::exp(get(host, r * cols + c) * scale - mx);
          for (std::int64_t c = 0; c < cols; ++c) {
            double want = c < kept ? std::exp(get(host, r * cols + c) * scale - mx) / sum : 0.0;
            double err = std::abs(get(got, r * cols + c) - want) / std::max(want, 1e-30);
            worst = std::max(worst, want > 1e-30 ? err : std::abs(get(got, r * cols + c)));
          }
        }
        const double bound = dtype == DType::bf16 ? 1.0 / 256 + 1e-5 : 2e-5;
        EXPECT_LE(worst, bound) << dtype_name(dtype) << " cols " << cols << (fused ? " fused" : "");
      }
    }
  }
}

TEST(CudaPrimitives, SoftmaxOfAnAllMinusInfRowIsNaN) {
  ATTNPROF_REQUIRE_GPU();
  Tensor host = random_host({1, 1, 2, 64}, DType::bf16, 12);
  for (std::int64_t c = 0; c < 64; ++c) set(host, c, -kInf);
  Tensor out = Tensor::empty(host.shape(), DType::bf16, Device::cuda);
  gpu().softmax_lastdim(out, to_device(host));
  Tensor got = to_host(out);
  EXPECT_TRUE(std::isnan(get(got, 0)));
  EXPECT_FALSE(std::isnan(get(got, 64)));
}

TEST(CudaPrimitives, DeviceMemoryStatsFollowTensors) {
  ATTNPROF_REQUIRE_GPU();
  gpu();
  memory::Stats before = memory::stats(Device::cuda);
  {
    Tensor t = Tensor::empty({1 << 20}, DType::fp32, Device::cuda);
    EXPECT_EQ(memory::stats(Device::cuda).current_bytes, before.current_bytes + (4 << 20));
  }
  EXPECT_EQ(memory::stats(Device::cuda).current_bytes, before.current_bytes);
}

// make_inputs uploads bshd views (a [B,S,H,D] buffer seen as [B,H,S,D]) with one copy.
TEST(CudaPrimitives, BshdViewsUploadAndDownloadAsBytes) {
  ATTNPROF_REQUIRE_GPU();
  const std::vector<std::int64_t> shape{2, 3, 5, 8}, strides{5 * 3 * 8, 8, 3 * 8, 1};
  Tensor host = Tensor::empty_strided(shape, strides, DType::bf16, Device::cpu);
  fill_normal(host, 7);
  Tensor dev = Tensor::empty_strided(shape, strides, DType::bf16, Device::cuda);
  gpu().copy(dev, host);
  Tensor back = Tensor::empty_strided(shape, strides, DType::bf16, Device::cpu);
  gpu().copy(back, dev);
  std::vector<double> want;
  for (std::int64_t i = 0; i < host.numel(); ++i) want.push_back(get(host, i));
  expect_exact(back, want, "bshd round trip");
}
