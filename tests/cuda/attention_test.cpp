// efficient and flash against fp64 over odd sequence lengths, Sq != Sk, D 64/128, GQA, both
// layouts, causal and not, bf16 and fp16, with NaN-poisoned outputs (every element must be written).
// Every other head dim: attention_head_dim_test.cpp.
#include <attnprof/error.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>

#include "cuda/fused_attention.h"
#include "cuda/fused_attention_check.h"

using namespace attnprof;
using namespace attnprof::cuda::gpu_testing;

namespace {

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

void check_variant(const char* name, bool flash, const std::vector<Problem>& all = problems()) {
  for (const Problem& p : all) check_fused(name, flash, p, problem_inputs(p));
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

TEST(CudaFusedAttention, HeadDimOutsideOneTo256IsRefusedNamingTheRange) {
  AttentionSpec spec;
  for (std::int64_t head_dim : {257, 0}) {
    spec.head_dim = head_dim;
    const auto why = cuda::fused_attention_refusal(spec);
    ASSERT_TRUE(why.has_value()) << head_dim;
    EXPECT_EQ(*why, "head_dim " + std::to_string(head_dim) + ": the fused GPU kernels take 1..256");
  }
  for (std::int64_t head_dim : {1, 33, 96, 256}) {
    spec.head_dim = head_dim;
    EXPECT_FALSE(cuda::fused_attention_refusal(spec).has_value()) << head_dim;
  }
}
