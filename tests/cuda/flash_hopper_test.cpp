// The sm_90a flash kernel (src/cuda/hopper/flash_*.cuh) against fp64: odd sequence lengths,
// Sq != Sk, D 64 and 128, GQA and MQA, bhsd and bshd, causal (top-left, bottom-right and a negative
// causal_offset that leaves rows seeing no key) and not, bf16 and fp16, NaN-poisoned outputs (every
// element must be written), LSE, for both schedules (cta_per_tile, tile_counter); then 100 repeated
// launches that must agree bit for bit. Skips with the reason without a GPU or on a device that is
// not compute capability 9.0.
#include <attnprof/error.h>
#include <attnprof/kernel_overrides.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "cuda/attention_reference.h"
#include "cuda/flash_gemm_probe.h"
#include "cuda/flash_hopper_check.h"
#include "cuda/hopper/flash_heuristics.h"
#include "cuda/hopper/flash_hopper.h"
#include "cuda/hopper/flash_traits.cuh"

using namespace attnprof;
using namespace attnprof::cuda::gpu_testing;
using namespace attnprof::cuda::flash_testing;

namespace {

std::vector<Problem> problems() {
  std::vector<Problem> all;
  for (std::int64_t s : {1, 17, 113, 1000, 1023, 4097})
    for (bool causal : {true, false}) all.push_back({1, 2, 2, s, s, 64, causal, 0, Layout::bhsd, DType::bf16});
  for (std::int64_t s : {113, 1023}) all.push_back({2, 2, 2, s, s, 128, true, 0, Layout::bhsd, DType::bf16});
  all.push_back({1, 2, 2, 113, 1000, 128, false, 0, Layout::bshd, DType::bf16});      // Sq < Sk
  all.push_back({1, 2, 2, 1000, 113, 64, true, 0, Layout::bhsd, DType::fp16});        // Sq > Sk, top-left
  all.push_back({1, 2, 2, 1000, 113, 128, true, 113 - 1000, Layout::bshd, DType::bf16});  // bottom-right: 887 blind rows
  all.push_back({1, 2, 2, 113, 1000, 64, true, 1000 - 113, Layout::bhsd, DType::bf16});   // bottom-right, Sq < Sk
  all.push_back({1, 3, 3, 300, 300, 128, true, -200, Layout::bhsd, DType::fp16});     // blind rows, whole blind CTAs
  all.push_back({1, 2, 2, 333, 777, 128, true, 0, Layout::bhsd, DType::bf16});
  all.push_back({2, 8, 2, 257, 257, 64, true, 0, Layout::bshd, DType::bf16});         // GQA 4:1, bshd
  all.push_back({1, 4, 1, 1000, 1000, 128, false, 0, Layout::bhsd, DType::fp16});     // MQA
  all.push_back({1, 2, 2, 777, 1500, 64, false, 0, Layout::bshd, DType::fp16});
  all.push_back({1, 2, 2, 600, 600, 128, true, 0, Layout::bhsd, DType::bf16, true});  // online rescale
  all.push_back({1, 2, 2, 600, 600, 64, false, 0, Layout::bshd, DType::fp16, true});
  all.push_back({1, 2, 2, 4097, 4097, 128, true, 0, Layout::bshd, DType::bf16});
  all.push_back({1, 2, 1, 129, 4097, 128, true, 4097 - 129, Layout::bhsd, DType::fp16});
  // Under compute-sanitizer (slow), ATTNPROF_QUICK keeps the shapes up to 1023.
  if (std::getenv("ATTNPROF_QUICK") != nullptr)
    all.erase(std::remove_if(all.begin(), all.end(), [](const Problem& p) { return std::max(p.Sq, p.Sk) > 1100; }),
              all.end());
  return all;
}

// More query tiles than an H200 has SMs (132), so a persistent CTA runs several: its K/V ring and Q
// barriers carry over from tile to tile, blind tiles included.
std::vector<Problem> many_tile_problems() {
  std::vector<Problem> all;
  all.push_back({4, 16, 16, 1000, 1000, 64, true, 0, Layout::bhsd, DType::bf16});          // 384 tiles
  all.push_back({2, 16, 8, 1000, 777, 128, true, -300, Layout::bshd, DType::fp16});        // 256 tiles, blind ones
  all.push_back({3, 8, 8, 700, 2000, 128, false, 0, Layout::bshd, DType::bf16});           // 144 tiles
  if (std::getenv("ATTNPROF_QUICK") != nullptr) all.resize(1);
  return all;
}

// o_without_lse: O is checked from a forward that asks for no LSE (tile_counter at D 64 runs another
// kernel when the LSE is asked for), the LSE from one that does.
void check_every_problem(cuda::hopper::FlashSchedule schedule, const char* name, std::int64_t only_head_dim = 0,
                         const std::vector<Problem>& list = problems(), bool o_without_lse = false) {
  std::uint64_t seed = 60;
  for (const Problem& p : list) {
    if (only_head_dim != 0 && p.D != only_head_dim) continue;
    expect_matches_fp64(schedule, name, p, seed += 3, o_without_lse);
  }
}

}  // namespace

// The kernel's two GEMMs alone (same TMA maps, shared-memory layout, descriptors and P fragments),
// on small integers so every sum is exact in fp32: if this passes and MatchesFp64 fails, the fault
// is in the pipeline, the softmax or the epilogue, not in the wgmma/TMA layouts. Every kernel head
// dim (64, 96, 128, 192, 256: key tiles of 128, 128, 128, 112, 80), and 80 and 40 through the
// wider kernels' zero-filled columns.
TEST(FlashHopper, GemmProbeMatchesTheCpuExactly) {
  ATTNPROF_REQUIRE_HOPPER();
  for (std::int64_t d : {64, 128, 96, 192, 256, 80, 40}) {
    const std::int64_t kd = cuda::hopper::flash_sm90_kernel_head_dim(d);
    const std::int64_t n = cuda::hopper::flash_sm90::flash_sm90_block_n(static_cast<int>(kd));
    std::mt19937 rng(static_cast<unsigned>(d));
    std::uniform_int_distribution<int> small(-3, 3);
    auto integers = [&](std::vector<std::int64_t> shape) {
      Tensor t = Tensor::empty(std::move(shape), DType::bf16, Device::cpu);
      for (std::int64_t i = 0; i < t.numel(); ++i) set(t, i, small(rng));
      return t;
    };
    const Tensor q = integers({128, d}), k = integers({128, d}), v = integers({128, d}), pm = integers({64, n});
    const Tensor q_dev = to_device(q), k_dev = to_device(k), v_dev = to_device(v), p_dev = to_device(pm);
    Tensor s_dev = Tensor::empty({64, n}, DType::fp32, Device::cuda), o_dev = Tensor::empty({64, kd}, DType::fp32, Device::cuda);
    poison(s_dev);
    poison(o_dev);
    cuda::hopper::run_flash_gemm_probe(s_dev.data<float>(), o_dev.data<float>(), q_dev.raw(), k_dev.raw(), v_dev.raw(),
                                       static_cast<const std::uint16_t*>(p_dev.raw()), static_cast<int>(d),
                                       cuda::backend_stream());
    gpu().synchronize();
    const Tensor s = to_host(s_dev), o = to_host(o_dev);
    int s_wrong = 0, o_wrong = 0;
    for (std::int64_t r = 0; r < 64; ++r) {
      for (std::int64_t c = 0; c < n; ++c) {
        double want = 0;
        for (std::int64_t x = 0; x < d; ++x) want += get(q, r * d + x) * get(k, c * d + x);
        if (get(s, r * n + c) != want && s_wrong++ < 5)
          ADD_FAILURE() << "D" << d << " S[" << r << "][" << c << "] = " << get(s, r * n + c) << ", want " << want;
      }
      for (std::int64_t c = 0; c < kd; ++c) {  // zero past d: the kernel's columns V does not have
        double want = 0;
        for (std::int64_t j = 0; j < n && c < d; ++j) want += get(pm, r * n + j) * get(v, j * d + c);
        if (get(o, r * kd + c) != want && o_wrong++ < 5)
          ADD_FAILURE() << "D" << d << " O[" << r << "][" << c << "] = " << get(o, r * kd + c) << ", want " << want;
      }
    }
    EXPECT_EQ(s_wrong, 0) << "D" << d << " (kernel D " << kd << "): elements of Q·Kᵀ wrong (of " << 64 * n << ")";
    EXPECT_EQ(o_wrong, 0) << "D" << d << " (kernel D " << kd << "): elements of P·V wrong (of " << 64 * kd << ")";
  }
}

// FA3's schedule (GEMM/softmax overlap, pingpong) on one CTA per query tile.
TEST(FlashHopper, CtaPerTileMatchesFp64) {
  ATTNPROF_REQUIRE_HOPPER();
  check_every_problem(cuda::hopper::FlashSchedule::cta_per_tile, "flash sm90-cta-per-tile");
}

// The tile-counter schedule: one CTA per SM drawing tiles from a device counter in L2 sections, two
// Q buffers, O written by TMA stores a warp at a time, P's row sums from the tensor cores at D 64
// (P·V over V and a ones column, m64n72; a forward that asks for the LSE runs the fp32-row-sum
// kernel there). O from forwards without an LSE, the LSE from forwards with one, over the many-tile
// problems (every CTA draws several tiles, blind ones among them), the usual ones (fewer tiles than
// SMs: every CTA draws the end at once) and, in full runs, long-key problems whose order splits into
// several L2 sections, the last one short (4·Sk·D bytes a pair = 4 MiB → sections of 4 pairs: 6 = 4
// + 2 with GQA, 5 = 4 + 1), so a wrong section formula leaves tiles unwritten (NaN) or computes a
// row against another head's keys.
TEST(FlashHopper, TileCounterMatchesFp64) {
  ATTNPROF_REQUIRE_HOPPER();
  using cuda::hopper::FlashSchedule;
  check_every_problem(FlashSchedule::tile_counter, "flash sm90-tile-counter", 0, many_tile_problems(), true);
  check_every_problem(FlashSchedule::tile_counter, "flash sm90-tile-counter", 0, problems(), true);
  if (std::getenv("ATTNPROF_QUICK") != nullptr) return;  // under compute-sanitizer: keys up to 1100, as above
  check_every_problem(FlashSchedule::tile_counter, "flash sm90-tile-counter", 0,
                      {{1, 6, 3, 300, 8192, 128, true, 8192 - 300, Layout::bshd, DType::bf16},  // bottom-right, GQA 2:1
                       {1, 5, 5, 150, 16384, 64, false, 0, Layout::bhsd, DType::fp16}},
                      true);
}

// The counter goes back to zero after every launch (the last CTA resets it): launches in a row over
// different tile counts each compute every tile, bit for bit the first launch of the same problem
// (which matches fp64). A counter left at k would make the next launch skip tiles (NaN-poisoned
// rows) and hand CTAs tiles past the end.
TEST(FlashHopper, TileCounterStartsEveryLaunchAtZero) {
  ATTNPROF_REQUIRE_HOPPER();
  const std::vector<Problem> list = {Problem{4, 16, 16, 600, 600, 64, true, 0, Layout::bhsd, DType::bf16},    // 320 tiles
                                     Problem{1, 2, 2, 300, 300, 128, true, 0, Layout::bhsd, DType::bf16},     // 6 tiles
                                     Problem{2, 16, 8, 1000, 1000, 128, true, 0, Layout::bhsd, DType::bf16}};  // 256 tiles
  std::vector<Inputs> inputs;
  std::vector<Tensor> first;
  for (const Problem& p : list) {
    inputs.push_back(make_inputs(p, 170));
    first.push_back(run_kernel(p, inputs.back(), nullptr, cuda::hopper::FlashSchedule::tile_counter));
    std::int64_t non_finite = 0;  // NaN poison left: a tile skipped
    for (std::int64_t i = 0; i < first.back().numel(); ++i) non_finite += std::isfinite(get(first.back(), i)) ? 0 : 1;
    EXPECT_EQ(non_finite, 0) << describe(p);
  }
  for (int run = 0; run < 4; ++run)
    for (std::size_t i = 0; i < list.size(); ++i)
      EXPECT_TRUE(same_bits(first[i], run_kernel(list[i], inputs[i], nullptr, cuda::hopper::FlashSchedule::tile_counter)))
          << describe(list[i]) << " run " << run;
}

// The timeline build (the tile-counter kernel plus clock reads): one record per (query tile,
// consumer warpgroup), every record written and consistent with its lane's anchors
// (decode_flash_timeline checks), the key tiles each pass visited those of its query block, and the
// output bit for bit the forward's.
TEST(FlashHopper, TimelineRecordsEveryPassAndKeepsTheOutput) {
  ATTNPROF_REQUIRE_HOPPER();
  const Problem p{2, 16, 16, 600, 600, 64, true, 0, Layout::bhsd, DType::bf16};  // 5 query blocks of 128 rows
  const Inputs in = make_inputs(p, 150);
  const Tensor forward = run_kernel(p, in, nullptr, cuda::hopper::FlashSchedule::tile_counter);
  Tensor out = empty_in_layout({p.B, p.H, p.Sq, p.D}, p.dtype, p.layout);
  poison(out);
  const std::vector<cuda::hopper::FlashTileTiming> timings =
      cuda::hopper::run_flash_timeline_sm90(args_of(p, in, out, nullptr), cuda::backend_stream());
  const Tensor timed = to_host(out);
  EXPECT_TRUE(same_bits(forward, timed));
  ASSERT_EQ(timings.size(), static_cast<std::size_t>(p.B * p.H * 5 * 2));
  std::vector<int> key_tiles_seen(6, 0);
  for (const auto& t : timings) {
    ASSERT_GE(t.key_tiles, 1);
    ASSERT_LE(t.key_tiles, 5);
    ASSERT_LE(t.begin_ns, t.end_ns);
    ++key_tiles_seen[static_cast<std::size_t>(t.key_tiles)];
  }
  for (int n = 1; n <= 5; ++n) EXPECT_EQ(key_tiles_seen[static_cast<std::size_t>(n)], p.B * p.H * 2) << n;  // block n−1 sees n
  const auto summary = cuda::hopper::summarize_flash_timeline(timings);
  std::printf("tile-counter timeline, 2x16x600x64 causal:\n%s", cuda::hopper::flash_timeline_text(summary, 256.0).c_str());
  EXPECT_GT(summary.mainloop_cycles_per_key_tile, 0.0);
}

// Out-of-range tails are covered above; this checks that without LSE nothing is written there
// (a null LSE pointer) and the output is the same as with it.
TEST(FlashHopper, WithoutLseGivesTheSameOutput) {
  ATTNPROF_REQUIRE_HOPPER();
  const Problem p{1, 2, 2, 1000, 1000, 128, true, 0, Layout::bhsd, DType::bf16};
  const Inputs in = make_inputs(p, 90);
  Tensor lse = Tensor::empty({p.B, p.H, p.Sq}, DType::fp32, Device::cuda);
  const Tensor with = run_kernel(p, in, &lse), without = run_kernel(p, in, nullptr);
  ASSERT_EQ(with.numel(), without.numel());
  EXPECT_TRUE(same_bits(with, without));
}

// Repeated launches on NaN-poisoned outputs give identical bits: no race on the K/V ring, no
// missing write, no read of a stage before its TMA landed (which would show as run-to-run noise).
TEST(FlashHopper, HundredRunsAreBitwiseIdentical) {
  ATTNPROF_REQUIRE_HOPPER();
  for (const Problem& p : {Problem{2, 4, 2, 1000, 1000, 128, true, 0, Layout::bhsd, DType::bf16},
                           Problem{1, 4, 4, 1023, 777, 64, false, 0, Layout::bshd, DType::fp16},
                           Problem{4, 16, 16, 600, 600, 64, true, 0, Layout::bhsd, DType::bf16}}) {  // 256 tiles
    const Inputs in = make_inputs(p, 120);
    Tensor lse = Tensor::empty({p.B, p.H, p.Sq}, DType::fp32, Device::cuda);
    const Tensor first = run_kernel(p, in, &lse);
    const Tensor first_lse = to_host(lse);
    int differing_runs = 0;
    const int runs = std::getenv("ATTNPROF_QUICK") != nullptr ? 10 : 100;  // 10 under compute-sanitizer
    for (int run = 1; run < runs; ++run) {
      const Tensor again = run_kernel(p, in, &lse);
      const Tensor again_lse = to_host(lse);
      if (!same_bits(first, again) || !same_bits(first_lse, again_lse))
        ++differing_runs;
    }
    EXPECT_EQ(differing_runs, 0) << describe(p);
  }
}

// The same for tile_counter (the automatic choice at D 64 up to 2048 rows and D 128 up to 4096):
// 100 launches without an LSE (at D 64 the ones column's kernel), O identical bit for bit.
TEST(FlashHopper, TileCounterHundredRunsAreBitwiseIdentical) {
  ATTNPROF_REQUIRE_HOPPER();
  for (const Problem& p : {Problem{4, 16, 16, 600, 600, 64, true, 0, Layout::bhsd, DType::bf16},      // 320 tiles
                           Problem{2, 16, 8, 1000, 1000, 128, true, 0, Layout::bshd, DType::fp16}}) {  // 256 tiles
    const Inputs in = make_inputs(p, 121);
    const Tensor first = run_kernel(p, in, nullptr, cuda::hopper::FlashSchedule::tile_counter);  // no LSE: the ones column
    int differing_runs = 0;
    const int runs = std::getenv("ATTNPROF_QUICK") != nullptr ? 10 : 100;  // 10 under compute-sanitizer
    for (int run = 1; run < runs; ++run)
      if (!same_bits(first, run_kernel(p, in, nullptr, cuda::hopper::FlashSchedule::tile_counter))) ++differing_runs;
    EXPECT_EQ(differing_runs, 0) << describe(p);
  }
}

// The flash variant's path (launch_flash_attention) runs this kernel on sm_90 unless the
// overrides ask for sm80 (--flash-schedule sm80); either way it matches fp64.
TEST(FlashHopper, KernelChoiceFollowsTheOverrides) {
  auto choose = [](const char* schedule) {
    KernelOverrides overrides;
    overrides.flash_schedule = schedule;
    set_kernel_overrides(overrides);
    return cuda::hopper::flash_schedule_choice();
  };
  KernelOverrides bad;
  bad.flash_schedule = "sm70";
  try {
    set_kernel_overrides(bad);
    ADD_FAILURE() << "flash_schedule sm70 was accepted";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("flash_schedule 'sm70':", 0), 0u) << e.what();
  }
  EXPECT_EQ(choose("sm80"), cuda::hopper::FlashSchedule::sm80);
  ATTNPROF_REQUIRE_HOPPER();
  EXPECT_EQ(choose(""), cuda::hopper::FlashSchedule::automatic);
  EXPECT_EQ(choose("sm90-cta-per-tile"), cuda::hopper::FlashSchedule::cta_per_tile);
  EXPECT_EQ(choose("sm90-tile-counter"), cuda::hopper::FlashSchedule::tile_counter);
  set_kernel_overrides(KernelOverrides{});

  const Problem p{1, 2, 2, 500, 500, 64, true, 0, Layout::bhsd, DType::bf16};
  const Inputs in = make_inputs(p, 150);
  const AttentionSpec spec = spec_of(p);
  Tensor lse = Tensor::empty({p.B, p.H, p.Sq}, DType::fp32, Device::cuda);
  const Tensor direct = run_kernel(p, in, &lse);
  for (const char* kernel : {"sm90-cta-per-tile", "sm80"}) {
    KernelOverrides overrides;
    overrides.flash_schedule = kernel;
    set_kernel_overrides(overrides);
    Tensor out = Tensor::empty({p.B, p.H, p.Sq, p.D}, p.dtype, Device::cuda);
    poison(out);
    gpu().attention_flash(spec, out, in.q, in.k, in.v, &lse);
    gpu().synchronize();
    const Tensor host = to_host(out);
    const Check c = check_against_fp64(p, in, host, to_host(lse));
    EXPECT_EQ(c.non_finite, 0) << kernel;
    EXPECT_LE(c.rel_error, 2.0 * c.baseline_rel_error + 2e-4) << kernel;
    if (std::string(kernel) == "sm90-cta-per-tile")  // the same kernel as the direct launch: the same bits
      EXPECT_TRUE(same_bits(host, direct));
  }
  set_kernel_overrides(KernelOverrides{});
}
