// efficient and flash at head dims other than 64 and 128 against fp64, over FlashAttention's own
// grid of (seq_q, seq_k) pairs × head dims {32, 40, 59, 64, 80, 96, 111, 128, 160, 192, 224, 256}
// (each specialisation, multiples of 8 on a larger one, and odd ones through the padded copy) ×
// MHA / GQA / MQA × non-causal / causal bottom-right; bf16, with fp16 and bshd on a rotating
// subset. Outputs are NaN-poisoned first (every element must be written). B 1-2, 1-4 heads: the
// GPU part takes well under a second on an H200, the fp64 reference on one core most of the time.
#include <attnprof/error.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "cuda/fused_attention.h"
#include "cuda/fused_attention_check.h"

using namespace attnprof;
using namespace attnprof::cuda::gpu_testing;

namespace {

constexpr std::pair<std::int64_t, std::int64_t> kSeqPairs[] = {
    {113, 203}, {128, 217}, {113, 211}, {108, 256}, {256, 512},  {512, 256}, {1024, 1024}, {1023, 1024},
    {1024, 1023}, {2048, 2048}, {1, 239}, {3, 799}, {127, 512}, {127, 513}, {239, 1},    {799, 3}};
constexpr std::int64_t kHeadDims[] = {32, 40, 59, 64, 80, 96, 111, 128, 160, 192, 224, 256};

struct Heads {
  std::int64_t batch, heads, kv_heads;
};
constexpr Heads kHeads[] = {{1, 2, 2} /* MHA */, {1, 4, 2} /* GQA 2:1 */, {2, 2, 1} /* MQA */};

std::vector<Problem> grid() {
  std::vector<Problem> all;
  int cell = 0;
  for (const auto& [sq, sk] : kSeqPairs)
    for (std::int64_t d : kHeadDims) {
      ++cell;
      // A rotating subset in fp16 and in bshd, so each covers every head dim and many pairs.
      const DType dtype = cell % 4 == 1 ? DType::fp16 : DType::bf16;
      const Layout layout = cell % 3 == 0 ? Layout::bshd : Layout::bhsd;
      for (const Heads& h : kHeads)
        for (bool causal : {false, true})
          all.push_back({h.batch, h.heads, h.kv_heads, sq, sk, d, causal, layout, dtype, std::nullopt,
                         CausalAlign::bottom_right});
    }
  // Under compute-sanitizer (ATTNPROF_QUICK), the pairs up to 1023 and every other head dim.
  if (std::getenv("ATTNPROF_QUICK") != nullptr) {
    std::vector<Problem> quick;
    for (const Problem& p : all)
      if (std::max(p.Sq, p.Sk) <= 1023 && (p.D == 32 || p.D == 59 || p.D == 96 || p.D == 160 || p.D == 256))
        quick.push_back(p);
    return quick;
  }
  return all;
}

void check_grid(const char* name, bool flash) {
  for (const Problem& p : grid()) check_fused(name, flash, p, problem_inputs(p));
}

}  // namespace

TEST(CudaFusedAttentionHeadDims, EfficientMatchesFp64OnFlashAttentionsGrid) {
  ATTNPROF_REQUIRE_GPU();
  check_grid("efficient", false);
}

TEST(CudaFusedAttentionHeadDims, FlashMatchesFp64OnFlashAttentionsGrid) {
  ATTNPROF_REQUIRE_GPU();
  check_grid("flash", true);
}

// The launchers take a head dim that is a multiple of 8 up to 256; any other reaches them only
// through the backend's padded copy. A direct call is refused before touching the device.
TEST(CudaFusedAttentionHeadDims, LauncherRefusesAHeadDimThatNeedsPadding) {
  cuda::FusedAttentionArgs args;
  args.dtype = DType::bf16;
  for (std::int64_t head_dim : {59, 264}) {
    args.head_dim = head_dim;
    try {
      cuda::launch_efficient_attention(args, nullptr);
      ADD_FAILURE() << "head_dim " << head_dim << " was launched";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()), "head_dim " + std::to_string(head_dim) +
                                           ": the fused GPU kernels take a multiple of 8 up to 256 (the CUDA backend "
                                           "pads the others)");
    }
  }
}
