// efficient and flash against fp64 over odd sequence lengths, Sq != Sk, D 64/128, GQA, both
// layouts, causal and not, bf16 and fp16, with NaN-poisoned outputs (every element must be written).
#include <attnprof/error.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "cuda/attention_reference.h"
#include "cuda/fused_attention.h"

using namespace attnprof;
using namespace attnprof::cuda::gpu_testing;

namespace {

struct Problem {
  std::int64_t B, H, Hkv, Sq, Sk, D;
  bool causal;
  Layout layout;
  DType dtype;
};

AttentionSpec spec_of(const Problem& p) {
  AttentionSpec s;
  s.batch = p.B;
  s.heads = p.H;
  s.kv_heads = p.Hkv;
  s.seq_q = p.Sq;
  s.seq_k = p.Sk;
  s.head_dim = p.D;
  s.causal = p.causal;
  s.layout = p.layout;
  s.dtype = p.dtype;
  s.device = Device::cuda;
  return s;
}

std::vector<Problem> problems() {
  std::vector<Problem> all;
  for (std::int64_t s : {1, 17, 113, 1000, 1023, 4097})
    for (bool causal : {true, false}) all.push_back({1, 2, 2, s, s, 64, causal, Layout::bhsd, DType::bf16});
  for (std::int64_t s : {113, 1023}) all.push_back({2, 2, 2, s, s, 128, true, Layout::bhsd, DType::bf16});
  all.push_back({1, 2, 2, 113, 1000, 128, false, Layout::bshd, DType::bf16});  // Sq < Sk
  all.push_back({1, 2, 2, 1000, 113, 64, true, Layout::bhsd, DType::fp16});    // Sq > Sk, causal top-left
  all.push_back({1, 2, 2, 333, 777, 128, true, Layout::bhsd, DType::bf16});
  all.push_back({2, 8, 2, 257, 257, 64, true, Layout::bshd, DType::bf16});     // GQA 4:1, bshd
  all.push_back({1, 4, 1, 1000, 1000, 128, false, Layout::bhsd, DType::fp16}); // MQA
  all.push_back({1, 2, 2, 4097, 4097, 128, true, Layout::bshd, DType::bf16});
  // Under compute-sanitizer (slow), ATTNPROF_QUICK keeps the shapes up to 1023.
  if (std::getenv("ATTNPROF_QUICK") != nullptr)
    all.erase(std::remove_if(all.begin(), all.end(), [](const Problem& p) { return std::max(p.Sq, p.Sk) > 1100; }),
              all.end());
  return all;
}

void check_variant(const char* name, bool flash) {
  for (const Problem& p : problems()) {
    AttentionSpec spec = spec_of(p);
    Tensor qh = random_host({p.B, p.H, p.Sq, p.D}, p.dtype, 31), kh = random_host({p.B, p.Hkv, p.Sk, p.D}, p.dtype, 32),
           vh = random_host({p.B, p.Hkv, p.Sk, p.D}, p.dtype, 33);
    Tensor q = in_layout(qh, p.layout), k = in_layout(kh, p.layout), v = in_layout(vh, p.layout);
    Tensor out = empty_in_layout({p.B, p.H, p.Sq, p.D}, p.dtype, p.layout);
    poison(out);
    Tensor lse = Tensor::empty({p.B, p.H, p.Sq}, DType::fp32, Device::cuda);
    if (flash) {
      gpu().attention_flash(spec, out, q, k, v, &lse);
    } else {
      gpu().attention_efficient(spec, out, q, k, v, &lse);
    }
    gpu().synchronize();
    Tensor lse_host = to_host(lse);
    ReferenceResult r = compare_with_fp64(spec, qh, kh, vh, to_host(out), &lse_host);
    std::string what = std::string(name) + " B" + std::to_string(p.B) + " H" + std::to_string(p.H) + "/" +
                       std::to_string(p.Hkv) + " Sq" + std::to_string(p.Sq) + " Sk" + std::to_string(p.Sk) + " D" +
                       std::to_string(p.D) + (p.causal ? " causal " : " full ") + std::string(p.layout == Layout::bhsd ? "bhsd" : "bshd") +
                       " " + std::string(dtype_name(p.dtype));
    EXPECT_EQ(r.non_finite, 0) << what;
    // At most twice the error of an fp64 reference that rounds P and O to the dtype (plus a floor).
    EXPECT_LE(r.rel_error, 2.0 * r.baseline_rel_error + 2e-4) << what << " baseline " << r.baseline_rel_error;
    EXPECT_LE(r.rel_error, 1e-2) << what;
    EXPECT_LE(r.lse_max_abs_error, 1e-3) << what;
    std::printf("%s: rel err %.2e (low-precision baseline %.2e), lse max err %.1e\n", what.c_str(), r.rel_error,
                r.baseline_rel_error, r.lse_max_abs_error);
  }
}

}  // namespace

TEST(CudaFusedAttention, FlashMatchesFp64) {
  ATTNPROF_REQUIRE_GPU();
  check_variant("flash", true);
}

// Every tile configuration flash can be built with (ATTNPROF_FLASH_CONFIG, a tuning knob).
TEST(CudaFusedAttention, EveryFlashTileConfigurationMatchesFp64) {
  ATTNPROF_REQUIRE_GPU();
  for (int config = 1; config <= 2; ++config) {
    setenv("ATTNPROF_FLASH_CONFIG", std::to_string(config).c_str(), 1);
    check_variant(("flash@" + std::to_string(config)).c_str(), true);
  }
  unsetenv("ATTNPROF_FLASH_CONFIG");
}

TEST(CudaFusedAttention, EfficientMatchesFp64) {
  ATTNPROF_REQUIRE_GPU();
  check_variant("efficient", false);
}

TEST(CudaFusedAttention, UnsupportedHeadDimIsAUsageErrorNamingTheFlag) {
  AttentionSpec spec;
  spec.head_dim = 96;
  auto why = cuda::fused_attention_refusal(spec);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->rfind("--head-dim 96:", 0), 0u) << *why;
}
