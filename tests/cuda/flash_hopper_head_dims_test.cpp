// The sm_90a flash kernel at every head dim it takes (multiples of 8 up to 256) against fp64: the
// kernels specialised for D 96, 192 and 256 (128×128, 128×112 and 128×80 tiles) at their own head
// dims and at the ones that run on them padded (72 and 80 on 96, 160 on 192, 224 on 256), and head
// dims below 64 and between 64 and 128 on the D 64 and D 128 kernels under both schedules; over
// FlashAttention's sequence pairs (113/203, 128/217, 1023/1024, 1024/1023, 1/239, 239/1, 799/3,
// 2048/2048), MHA, GQA and MQA, causal bottom-right and not, bf16 and fp16, both layouts, and keys
// that force the online rescale; NaN-poisoned O and LSE (every element written, none past D: a store
// past D in bshd lands in the next head's columns). Failures name the schedule, the problem and the
// element that differed most. Then repeated launches of the new kernels that must agree bit for
// bit. Skips with the reason without a GPU or on a device that is not compute capability 9.0.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "cuda/attention_reference.h"
#include "cuda/flash_hopper_check.h"
#include "cuda/hopper/flash_hopper.h"

using namespace attnprof;
using namespace attnprof::cuda::gpu_testing;
using namespace attnprof::cuda::flash_testing;
using attnprof::cuda::hopper::FlashSchedule;

namespace {

const std::vector<std::pair<std::int64_t, std::int64_t>>& sequence_pairs() {
  static const std::vector<std::pair<std::int64_t, std::int64_t>> pairs = {
      {113, 203}, {128, 217}, {1023, 1024}, {1024, 1023}, {1, 239}, {239, 1}, {799, 3}, {2048, 2048}};
  return pairs;
}

// Every sequence pair at head dim d, causal bottom-right (offset Sk − Sq) and not; the heads (MHA
// 2/2, GQA 4/2, MQA 3/1), the layout, the batch (1 or 2) and the dtype (about one problem in four
// fp16) rotate with the pair and the head dim, so every head dim sees each of them.
std::vector<Problem> grid(std::int64_t d, int salt) {
  static const std::int64_t heads[3][2] = {{2, 2}, {4, 2}, {3, 1}};
  std::vector<Problem> all;
  int i = 0;
  for (const auto& [sq, sk] : sequence_pairs())
    for (bool causal : {true, false}) {
      const int k = i++ + salt;
      const std::int64_t* h = heads[k % 3];
      const std::int64_t batch = k % 4 == 1 ? 2 : 1;
      all.push_back({batch, h[0], h[1], sq, sk, d, causal, causal ? sk - sq : 0, (k / 3) % 2 ? Layout::bshd : Layout::bhsd,
                     k % 4 == 3 ? DType::fp16 : DType::bf16});
    }
  if (std::getenv("ATTNPROF_QUICK") != nullptr)  // under compute-sanitizer: keys up to 1100
    std::erase_if(all, [](const Problem& p) { return std::max(p.Sq, p.Sk) > 1100; });
  return all;
}

void check_grid(FlashSchedule schedule, const char* name, const std::vector<std::int64_t>& head_dims,
                bool o_without_lse = false) {
  std::uint64_t seed = 400;
  int salt = 0;
  for (std::int64_t d : head_dims) {
    ASSERT_TRUE(cuda::hopper::flash_sm90_takes_head_dim(d)) << d;
    for (const Problem& p : grid(d, salt++)) expect_matches_fp64(schedule, name, p, seed += 3, o_without_lse);
  }
}

}  // namespace

// The new kernels at their own head dims and at the padded ones that run on them, through the
// automatic schedule (cta_per_tile: the one built for them).
TEST(FlashHopperHeadDims, NewKernelsMatchFp64) {
  ATTNPROF_REQUIRE_HOPPER();
  check_grid(FlashSchedule::automatic, "flash sm90 automatic", {72, 80, 96, 160, 192, 224, 256});
  // Keys whose logits grow in the order visited (last tile first), so the online rescale of O runs
  // at every one of the shorter key tiles.
  std::uint64_t seed = 700;
  for (const Problem& p : {Problem{1, 2, 2, 600, 600, 256, true, 0, Layout::bhsd, DType::bf16, true},
                           Problem{1, 2, 2, 600, 600, 192, false, 0, Layout::bshd, DType::fp16, true},
                           Problem{1, 2, 2, 600, 600, 96, true, 0, Layout::bshd, DType::bf16, true}})
    expect_matches_fp64(FlashSchedule::automatic, "flash sm90 automatic", p, seed += 3);
}

// Head dims below 64 and from 104 to 120 run on the D 64 and D 128 kernels, padded, under both
// schedules (the tile counter's TMA-store epilogue clips at D; at D 64 its forward without an LSE
// sums P on the tensor cores: O from that forward, the LSE from one that asks for it).
TEST(FlashHopperHeadDims, PaddedHeadDimsOnTheD64AndD128KernelsMatchFp64) {
  ATTNPROF_REQUIRE_HOPPER();
  check_grid(FlashSchedule::cta_per_tile, "flash sm90-cta-per-tile", {8, 40, 104});
  check_grid(FlashSchedule::tile_counter, "flash sm90-tile-counter", {32, 56, 120}, true);
}

// Repeated launches of the new kernels on NaN-poisoned outputs give identical bits (no race on the
// K/V ring at the shorter key tiles, no element left unwritten).
TEST(FlashHopperHeadDims, RepeatedRunsAreBitwiseIdentical) {
  ATTNPROF_REQUIRE_HOPPER();
  for (const Problem& p : {Problem{2, 4, 2, 1000, 1000, 96, true, 0, Layout::bhsd, DType::bf16},
                           Problem{1, 4, 1, 777, 1023, 192, false, 0, Layout::bshd, DType::fp16},
                           Problem{2, 4, 4, 1000, 1000, 256, true, 0, Layout::bhsd, DType::bf16},
                           Problem{1, 4, 2, 600, 601, 200, true, 1, Layout::bshd, DType::bf16}}) {
    const Inputs in = make_inputs(p, 220);
    Tensor lse = Tensor::empty({p.B, p.H, p.Sq}, DType::fp32, Device::cuda);
    const Tensor first = run_kernel(p, in, &lse, FlashSchedule::automatic);
    const Tensor first_lse = to_host(lse);
    int differing_runs = 0;
    for (int run = 1; run < 20; ++run) {
      const Tensor again = run_kernel(p, in, &lse, FlashSchedule::automatic);
      if (!same_bits(first, again) || !same_bits(first_lse, to_host(lse))) ++differing_runs;
    }
    EXPECT_EQ(differing_runs, 0) << describe(p) << ": runs of 19 that differ from the first";
  }
}
