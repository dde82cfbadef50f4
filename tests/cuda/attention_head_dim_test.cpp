// efficient and flash at head dims other than 64 and 128 against fp64, over FlashAttention's own
// grid of (seq_q, seq_k) pairs × head dims {32, 40, 59, 64, 80, 96, 111, 128, 160, 192, 224, 256}
// (each specialisation, multiples of 8 on a larger one, and odd ones through the padded copy) ×
// MHA / GQA / MQA × non-causal / causal bottom-right; bf16, with fp16 and bshd on a rotating
// subset. Outputs are NaN-poisoned first (every element must be written). B 1-2, 1-4 heads: the
// GPU part takes well under a second; the inputs and the fp64 reference, on one core, ~30 s of
// CPU time on a shared 2-core build machine.
#include <attnprof/error.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cuda/fused_attention.h"
#include "cuda/flash_attention_grid.h"
#include "cuda/fused_attention_check.h"

using namespace attnprof;
using namespace attnprof::cuda::gpu_testing;

namespace {

struct Heads {
  std::int64_t batch, heads, kv_heads;
};
constexpr Heads kHeads[] = {{1, 2, 2} /* MHA */, {1, 4, 2} /* GQA 2:1 */, {2, 2, 1} /* MQA */};

std::vector<Problem> grid() {
  std::vector<Problem> all;
  int pair_index = 0;
  for (const auto& [sq, sk] : kFlashAttentionSeqPairs) {
    int dim_index = 0;
    for (std::int64_t d : kGridHeadDims) {
      // A rotating subset in fp16 (a quarter) and in bshd (a third): every head dim gets each on
      // several pairs, every pair on several head dims.
      const int rotation = pair_index + dim_index++;
      const DType dtype = rotation % 4 == 1 ? DType::fp16 : DType::bf16;
      const Layout layout = rotation % 3 == 0 ? Layout::bshd : Layout::bhsd;
      for (const Heads& h : kHeads)
        for (bool causal : {false, true})
          all.push_back({h.batch, h.heads, h.kv_heads, sq, sk, d, causal, layout, dtype, std::nullopt,
                         CausalAlign::bottom_right});
    }
    ++pair_index;
  }
  // Under compute-sanitizer (ATTNPROF_QUICK, slow): quick_grid_cell's subset.
  if (std::getenv("ATTNPROF_QUICK") != nullptr) {
    std::vector<Problem> quick;
    for (const Problem& p : all)
      if (quick_grid_cell(p.Sq, p.Sk, p.D)) quick.push_back(p);
    return quick;
  }
  return all;
}

}  // namespace

// Both variants on each problem's inputs, made once per shape (the inputs and the fp64 reference,
// on one core, take most of the test's time; the seeds are fixed, so the causal and non-causal
// problems of a shape share them).
TEST(CudaFusedAttentionHeadDims, EfficientAndFlashMatchFp64OnFlashAttentionsGrid) {
  ATTNPROF_REQUIRE_GPU();
  std::optional<Problem> made_for;
  ProblemInputs in;
  for (const Problem& p : grid()) {
    if (!made_for || made_for->B != p.B || made_for->H != p.H || made_for->Hkv != p.Hkv || made_for->Sq != p.Sq ||
        made_for->Sk != p.Sk || made_for->D != p.D || made_for->layout != p.layout || made_for->dtype != p.dtype) {
      in = problem_inputs(p);
      made_for = p;
    }
    check_fused("efficient", false, p, in);
    check_fused("flash", true, p, in);
  }
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
