// cuDNN SDPA through the backend graph: correctness vs fp64, the plan cache, the chosen engine.
#include <attnprof/error.h>
#include <attnprof/kernel_overrides.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>

#include "cuda/attention_reference.h"
#include "cuda/cudnn_sdpa.h"

using namespace attnprof;
using namespace attnprof::cuda::gpu_testing;

namespace {

AttentionSpec make_spec(std::int64_t B, std::int64_t H, std::int64_t Hkv, std::int64_t Sq, std::int64_t Sk, std::int64_t D,
                        bool causal, Layout layout) {
  AttentionSpec s;
  s.batch = B;
  s.heads = H;
  s.kv_heads = Hkv;
  s.seq_q = Sq;
  s.seq_k = Sk;
  s.head_dim = D;
  s.causal = causal;
  s.layout = layout;
  s.dtype = DType::bf16;
  s.device = Device::cuda;
  return s;
}

}  // namespace

TEST(CudnnSdpa, MatchesFp64AndCachesPlans) {
  ATTNPROF_REQUIRE_GPU();
  const AttentionSpec specs[] = {
      make_spec(1, 2, 2, 1000, 1000, 64, true, Layout::bhsd),
      make_spec(1, 2, 2, 1023, 1023, 128, false, Layout::bhsd),
      make_spec(2, 8, 2, 257, 257, 128, true, Layout::bshd),   // GQA, bshd
      make_spec(1, 2, 2, 113, 1000, 64, false, Layout::bshd),  // Sq < Sk
  };
  for (const AttentionSpec& spec : specs) {
    Tensor qh = random_host({spec.batch, spec.heads, spec.seq_q, spec.head_dim}, spec.dtype, 41);
    Tensor kh = random_host({spec.batch, spec.kv_heads, spec.seq_k, spec.head_dim}, spec.dtype, 42);
    Tensor vh = random_host({spec.batch, spec.kv_heads, spec.seq_k, spec.head_dim}, spec.dtype, 43);
    Tensor q = in_layout(qh, spec.layout), k = in_layout(kh, spec.layout), v = in_layout(vh, spec.layout);
    Tensor out = empty_in_layout({spec.batch, spec.heads, spec.seq_q, spec.head_dim}, spec.dtype, spec.layout);
    poison(out);
    Tensor lse = Tensor::empty({spec.batch, spec.heads, spec.seq_q}, DType::fp32, Device::cuda);
    cuda::CudnnPlanInfo first = cuda::cudnn_sdpa_forward(spec, out, q, k, v, &lse, cuda::backend_stream());
    gpu().synchronize();
    EXPECT_FALSE(first.cache_hit);
    EXPECT_GT(first.build_ms, 0.0);
    cuda::CudnnPlanInfo second = cuda::cudnn_sdpa_forward(spec, out, q, k, v, &lse, cuda::backend_stream());
    gpu().synchronize();
    EXPECT_TRUE(second.cache_hit);
    EXPECT_EQ(second.build_ms, 0.0);
    Tensor lse_host = to_host(lse);
    ReferenceResult r = compare_with_fp64(spec, qh, kh, vh, to_host(out), &lse_host);
    EXPECT_EQ(r.non_finite, 0);
    EXPECT_LE(r.rel_error, 2.0 * r.baseline_rel_error + 2e-4) << "baseline " << r.baseline_rel_error;
    EXPECT_LE(r.lse_max_abs_error, 1e-3);
    std::printf("cudnn %s %s: rel err %.2e (baseline %.2e), plan %s, engine %lld, kernel cfg %lld, build %.1f ms\n",
                spec.causal ? "causal" : "full", spec.layout == Layout::bhsd ? "bhsd" : "bshd", r.rel_error,
                r.baseline_rel_error, first.graph.c_str(), static_cast<long long>(first.engine_id),
                static_cast<long long>(first.kernel_cfg), first.build_ms);
  }
}

TEST(CudnnSdpa, UnsupportedHeadDimIsOneClearLine) {
  ATTNPROF_REQUIRE_GPU();
  AttentionSpec spec = make_spec(1, 1, 1, 64, 64, 264, true, Layout::bhsd);
  Tensor q = Tensor::empty({1, 1, 64, 264}, DType::bf16, Device::cuda);
  Tensor out = Tensor::empty({1, 1, 64, 264}, DType::bf16, Device::cuda);
  try {
    cuda::cudnn_sdpa_forward(spec, out, q, q, q, nullptr, cuda::backend_stream());
    FAIL() << "no throw";
  } catch (const UsageError& e) {
    std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos);
    EXPECT_NE(what.find("264"), std::string::npos) << what;
  }
}

// The plan keeps the fastest of the first heuristics configs (at the blog shape mode A's first is
// knob 32 where PyTorch runs knob 7); KernelOverrides::cudnn_engine n builds config n alone. A
// small causal D 64 problem of the same kernel family (several configs offered), so the timing
// stays quick under compute-sanitizer.
TEST(CudnnSdpa, PlanKeepsTheFastestTimedConfigAndTheKnobPicksOne) {
  ATTNPROF_REQUIRE_GPU();
  const AttentionSpec spec = make_spec(1, 4, 4, 1024, 1024, 64, true, Layout::bhsd);
  set_kernel_overrides(KernelOverrides{});
  const cuda::CudnnPlanInfo tuned = cuda::cudnn_sdpa_prepare(spec, false);
  std::printf("cudnn 1x4x1024x64 causal: %lld configs offered, kept index %lld (kernel cfg %lld); timed: %s\n",
              static_cast<long long>(tuned.configs_offered), static_cast<long long>(tuned.config_index),
              static_cast<long long>(tuned.kernel_cfg), tuned.timed.c_str());
  ASSERT_GE(tuned.configs_offered, 2);
  ASSERT_FALSE(tuned.timed.empty());
  EXPECT_GE(tuned.config_index, 0);
  EXPECT_LT(tuned.config_index, 3);

  KernelOverrides overrides;
  overrides.cudnn_engine = 1;
  set_kernel_overrides(overrides);
  const cuda::CudnnPlanInfo second = cuda::cudnn_sdpa_prepare(spec, false);
  EXPECT_FALSE(second.cache_hit);  // the knob is part of the plan key
  EXPECT_EQ(second.config_index, 1);
  EXPECT_TRUE(second.timed.empty());
  overrides.cudnn_engine = 999;  // more than the heuristics offer
  set_kernel_overrides(overrides);
  EXPECT_THROW(cuda::cudnn_sdpa_prepare(spec, false), UsageError);
  overrides.cudnn_engine = -2;  // refused when set: the overrides stay at 999
  EXPECT_THROW(set_kernel_overrides(overrides), UsageError);
  set_kernel_overrides(KernelOverrides{});
}
