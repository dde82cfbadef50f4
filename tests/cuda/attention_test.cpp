// efficient and flash against fp64 over odd sequence lengths, Sq != Sk, D 64/128, GQA, both
// layouts, causal and not, bf16 and fp16, with NaN-poisoned outputs (every element must be written).
#include <attnprof/error.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>

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
  // Set: the kernel is launched directly with this FusedAttentionArgs::causal_offset (row i sees
  // key j iff j <= i + offset) and checked against the fp64 reference with the same offset.
  std::optional<std::int64_t> causal_offset = std::nullopt;
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

// Causal with the diagonal moved: offsets > 0 (bottom-right with Sq < Sk, and arbitrary), < 0
// with rows that see no key (bottom-right with Sq > Sk: whole query blocks and partial ones), tails
// everywhere (no S a multiple of 64), GQA, both layouts, D 64 and 128, bf16 and fp16.
std::vector<Problem> offset_problems() {
  std::vector<Problem> all = {
      {1, 2, 2, 113, 1000, 64, true, Layout::bhsd, DType::bf16, 887},   // bottom-right, Sq < Sk
      {1, 2, 2, 100, 333, 128, true, Layout::bshd, DType::fp16, 233},   // bottom-right, Sq < Sk
      {1, 2, 2, 1000, 113, 64, true, Layout::bhsd, DType::bf16, -887},  // 887 rows see nothing
      {1, 2, 2, 333, 77, 128, true, Layout::bshd, DType::bf16, -256},   // rows 0-255 see nothing
      {2, 8, 2, 300, 200, 64, true, Layout::bshd, DType::fp16, -100},   // GQA 4:1
      {1, 2, 2, 517, 517, 128, true, Layout::bhsd, DType::bf16, 45},
      {1, 2, 2, 517, 517, 64, true, Layout::bhsd, DType::bf16, -37},
      {1, 2, 2, 17, 17, 64, true, Layout::bhsd, DType::bf16, -20},      // every row sees nothing
      {1, 2, 2, 200, 150, 128, false, Layout::bhsd, DType::bf16, -500}, // not causal: the offset is ignored
  };
  // Under compute-sanitizer (ATTNPROF_QUICK), the shapes up to 520 (every case but the 1000-row pair).
  if (std::getenv("ATTNPROF_QUICK") != nullptr)
    all.erase(std::remove_if(all.begin(), all.end(), [](const Problem& p) { return std::max(p.Sq, p.Sk) > 520; }),
              all.end());
  return all;
}

// FusedAttentionArgs for a problem, as the CUDA backend builds them, plus the causal offset.
cuda::FusedAttentionArgs direct_args(const AttentionSpec& spec, std::int64_t causal_offset, Tensor& out,
                                     const Tensor& q, const Tensor& k, const Tensor& v, Tensor& lse) {
  cuda::FusedAttentionArgs a = cuda::fused_attention_args(spec, out, q, k, v, &lse);
  a.causal_offset = causal_offset;
  return a;
}

void check_variant(const char* name, bool flash, const std::vector<Problem>& all = problems()) {
  for (const Problem& p : all) {
    AttentionSpec spec = spec_of(p);
    Tensor qh = random_host({p.B, p.H, p.Sq, p.D}, p.dtype, 31), kh = random_host({p.B, p.Hkv, p.Sk, p.D}, p.dtype, 32),
           vh = random_host({p.B, p.Hkv, p.Sk, p.D}, p.dtype, 33);
    Tensor q = in_layout(qh, p.layout), k = in_layout(kh, p.layout), v = in_layout(vh, p.layout);
    Tensor out = empty_in_layout({p.B, p.H, p.Sq, p.D}, p.dtype, p.layout);
    poison(out);
    Tensor lse = Tensor::empty({p.B, p.H, p.Sq}, DType::fp32, Device::cuda);
    if (p.causal_offset) {
      poison(lse);
      gpu().synchronize();
      const cuda::FusedAttentionArgs args = direct_args(spec, *p.causal_offset, out, q, k, v, lse);
      flash ? cuda::launch_flash_attention(args, cuda::backend_stream())
            : cuda::launch_efficient_attention(args, cuda::backend_stream());
    } else if (flash) {
      gpu().attention_flash(spec, out, q, k, v, &lse);
    } else {
      gpu().attention_efficient(spec, out, q, k, v, &lse);
    }
    gpu().synchronize();
    Tensor lse_host = to_host(lse);
    ReferenceResult r = compare_with_fp64(spec, qh, kh, vh, to_host(out), &lse_host, -1, p.causal_offset);
    std::string what = std::string(name) + " B" + std::to_string(p.B) + " H" + std::to_string(p.H) + "/" +
                       std::to_string(p.Hkv) + " Sq" + std::to_string(p.Sq) + " Sk" + std::to_string(p.Sk) + " D" +
                       std::to_string(p.D) + (p.causal ? " causal " : " full ") + std::string(p.layout == Layout::bhsd ? "bhsd" : "bshd") +
                       " " + std::string(dtype_name(p.dtype)) +
                       (p.causal_offset ? " offset " + std::to_string(*p.causal_offset) : std::string());
    EXPECT_EQ(r.non_finite, 0) << what;
    EXPECT_EQ(r.masked_nonzero, 0) << what << ": rows that see no key must be zeros (" << r.masked_rows << " rows)";
    if (r.masked_rows == p.Sq) {  // nothing to compare against but zeros and -inf
      EXPECT_EQ(r.lse_max_abs_error, 0.0) << what;
      continue;
    }
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

TEST(CudaFusedAttention, EfficientMatchesFp64) {
  ATTNPROF_REQUIRE_GPU();
  check_variant("efficient", false);
}

TEST(CudaFusedAttention, CausalOffsetMatchesFp64InEveryKernel) {
  ATTNPROF_REQUIRE_GPU();
  check_variant("efficient", false, offset_problems());
  check_variant("flash", true, offset_problems());
}

TEST(CudaFusedAttention, UnsupportedHeadDimIsAUsageErrorNamingTheFlag) {
  AttentionSpec spec;
  spec.head_dim = 96;
  auto why = cuda::fused_attention_refusal(spec);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->rfind("head_dim 96:", 0), 0u) << *why;
}
