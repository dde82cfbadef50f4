// The split-KV decode forward (src/cuda/decode_forward.h) against fp64: seq_q 1..16 against
// seq_k 239 / 512 / 799 / 4096 / 32771 (the first 4 heads checked there), MHA, GQA 4:1 and MQA (query heads packed into 16-row
// tiles, up to 4 row blocks), causal bottom-right and not, D 64 and 128, bf16 and fp16, bhsd and
// bshd, split counts from 1 to 128 (forced, and the device's own plan), rows that see no key
// (a negative causal offset), NaN-poisoned O and LSE (every element must be written); the merge
// in the split kernel (the last CTA of each (batch, kv head, row block) merges its splits, or on
// the one-CTA geometry at 2 splits the first CTA of its thread block cluster): bit-identical
// run to run, its arrival counters left at zero by every launch (launches of other split counts
// and shapes in between), grown past the 4096 first made; then `flash` through the CUDA backend,
// which must take the decode path on decode shapes.
#include <attnprof/error.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cuda/attention_reference.h"
#include "cuda/decode_forward.h"
#include "cuda/decode_geometry_probe.h"
#include "cuda/flash_hopper_check.h"
#include "cuda/fused_attention.h"

using namespace attnprof;
using namespace attnprof::cuda::gpu_testing;

namespace {

struct Case {
  std::int64_t B, H, Hkv, Sq, Sk, D;
  bool causal;
  Layout layout;
  DType dtype;
  int splits;  // forced split count; 0: the device's plan (flash_decode_plan)
  std::optional<std::int64_t> causal_offset = std::nullopt;  // else bottom-right, Sk − Sq
};

std::string describe(const Case& c, const cuda::DecodePlan& plan) {
  return "B" + std::to_string(c.B) + " H" + std::to_string(c.H) + "/" + std::to_string(c.Hkv) + " Sq" +
         std::to_string(c.Sq) + " Sk" + std::to_string(c.Sk) + " D" + std::to_string(c.D) +
         (c.causal ? " causal offset " + std::to_string(c.causal_offset.value_or(c.Sk - c.Sq)) : std::string(" full")) +
         " " + std::string(c.layout == Layout::bhsd ? "bhsd" : "bshd") + " " + std::string(dtype_name(c.dtype)) +
         " splits " + std::to_string(plan.splits) + " of " + std::to_string(plan.keys_per_split) + " keys, " +
         std::to_string(plan.row_blocks) + " row block(s)" + (plan.one_cta_per_sm ? ", one CTA an SM" : "") +
         (plan.merges_in_clusters() ? ", merged in clusters" : "");
}

AttentionSpec spec_of(const Case& c) {
  AttentionSpec s;
  s.batch = c.B;
  s.heads = c.H;
  s.kv_heads = c.Hkv;
  s.seq_q = c.Sq;
  s.seq_k = c.Sk;
  s.head_dim = c.D;
  s.causal = c.causal;
  s.causal_align = CausalAlign::bottom_right;
  s.layout = c.layout;
  s.dtype = c.dtype;
  s.device = Device::cuda;
  return s;
}

// Heads: MHA 2/2, GQA 8/2 (4 query heads a kv head), MQA 4/1.
constexpr std::int64_t kHeads[3][2] = {{2, 2}, {8, 2}, {4, 1}};
constexpr int kForcedSplits[] = {1, 2, 7, 128};

std::vector<Case> small_cases() {
  std::vector<Case> all;
  int n = 0;
  for (std::int64_t sk : {239, 512, 799})
    for (std::int64_t sq = 1; sq <= 16; ++sq)
      for (const auto& heads : kHeads)
        for (bool causal : {true, false})
          for (std::int64_t d : {64, 128}) {
            const Layout layout = n % 3 == 2 ? Layout::bshd : Layout::bhsd;
            const DType dtype = n % 5 == 4 ? DType::fp16 : DType::bf16;
            all.push_back({1, heads[0], heads[1], sq, sk, d, causal, layout, dtype, kForcedSplits[n % 4]});
            ++n;
          }
  return all;
}

std::vector<Case> long_cases() {
  std::vector<Case> all;
  int n = 0;
  for (std::int64_t sq : {1, 2, 7, 16})
    for (const auto& heads : kHeads)
      for (bool causal : {true, false})
        for (std::int64_t d : {64, 128}) {
          all.push_back({1, heads[0], heads[1], sq, 4096, d, causal, n % 2 ? Layout::bshd : Layout::bhsd,
                         n % 3 == 0 ? DType::fp16 : DType::bf16, n % 4 == 0 ? 0 : kForcedSplits[n % 4]});
          ++n;
        }
  for (std::int64_t sq : {1, 16})
    for (const auto& heads : kHeads)
      for (bool causal : {true, false})
        all.push_back({1, heads[0], heads[1], sq, 32771, 128, causal, Layout::bhsd, DType::bf16, causal ? 0 : 128});
  return all;
}

// Rows that see no key: causal offsets below Sk − Sq, some negative.
std::vector<Case> offset_cases() {
  return {
      {1, 8, 2, 16, 1000, 128, true, Layout::bhsd, DType::bf16, 1, -8},   // rows 0-7 see nothing, 8-15 one to 8 keys
      {1, 8, 2, 16, 1000, 64, true, Layout::bshd, DType::fp16, 3, 300},   // 3 splits of 128: the last rows reach the third
      {2, 4, 1, 5, 4096, 128, true, Layout::bhsd, DType::bf16, 7, -3},    // rows 0-2 see nothing
      {1, 2, 2, 16, 600, 64, true, Layout::bhsd, DType::bf16, 128, 100},  // more splits asked than 128-key blocks
  };
}

// Launches the decode kernel (the production geometry, or `geometry` of decode_geometry_probe.h)
// directly with the case's plan (with one_cta: forced to the one-CTA geometry; `launched`, if
// given, gets the plan) and checks O and the LSE against fp64.
void check(const Case& c, int geometry = -1, bool one_cta = false, cuda::DecodePlan* launched = nullptr) {
  const AttentionSpec spec = spec_of(c);
  Tensor qh = random_host({c.B, c.H, c.Sq, c.D}, c.dtype, 41), kh = random_host({c.B, c.Hkv, c.Sk, c.D}, c.dtype, 42),
         vh = random_host({c.B, c.Hkv, c.Sk, c.D}, c.dtype, 43);
  Tensor q = in_layout(qh, c.layout), k = in_layout(kh, c.layout), v = in_layout(vh, c.layout);
  Tensor out = empty_in_layout({c.B, c.H, c.Sq, c.D}, c.dtype, c.layout);
  Tensor lse = Tensor::empty({c.B, c.H, c.Sq}, DType::fp32, Device::cuda);
  poison(out);
  poison(lse);
  cuda::FusedAttentionArgs args = cuda::fused_attention_args(spec, out, q, k, v, &lse);
  if (c.causal_offset) args.causal_offset = *c.causal_offset;
  const cuda::DecodeShape shape = cuda::DecodeShape::of(args);
  cuda::DecodePlan plan =
      c.splits == 0 ? cuda::flash_decode_plan(shape) : cuda::decode_plan_with_splits(shape, c.splits);
  if (one_cta) plan.one_cta_per_sm = true;
  if (launched != nullptr) *launched = plan;
  const std::string what =
      describe(c, plan) + (geometry < 0 ? std::string() : std::string(", geometry ") + cuda::decode_testing::geometry_name(geometry));
  ASSERT_TRUE(plan.runs()) << what << ": no decode plan";
  gpu().synchronize();
  if (geometry < 0) {
    cuda::launch_decode_attention(args, plan, cuda::backend_stream());
  } else {
    // Another geometry than the plan's may merge through the workspace where the plan's would not.
    cuda::DecodePlan with_workspace = plan;
    with_workspace.one_cta_per_sm = false;
    const cuda::decode::PreparedDecode prepared =
        cuda::decode::prepare_decode(args, with_workspace, cuda::backend_stream());
    cuda::decode_testing::launch_geometry(geometry, prepared.args, prepared.params, cuda::backend_stream());
  }
  gpu().synchronize();
  const Tensor lse_host = to_host(lse);
  // Past 4096 keys the fp64 reference checks the first 4 heads (a whole GQA group) to bound its time.
  const ReferenceResult r =
      compare_with_fp64(spec, qh, kh, vh, to_host(out), &lse_host, c.Sk > 4096 ? 4 : -1, args.causal_offset);
  EXPECT_EQ(r.non_finite, 0) << what << ": elements left NaN or non-finite";
  EXPECT_EQ(r.masked_nonzero, 0) << what << ": " << r.masked_rows << " rows see no key and must be zeros";
  if (r.masked_rows == c.Sq) {
    EXPECT_EQ(r.lse_max_abs_error, 0.0) << what << ": rows that see no key need LSE -inf";
    return;
  }
  // Within twice an fp64 reference that rounds P and O to the dtype, as the tile kernels' tests.
  EXPECT_LE(r.rel_error, 2.0 * r.baseline_rel_error + 2e-4)
      << what << ": relative error " << r.rel_error << " against a low-precision baseline of " << r.baseline_rel_error;
  EXPECT_LE(r.rel_error, 1e-2) << what;
  EXPECT_LE(r.lse_max_abs_error, 1e-3) << what << ": LSE off by " << r.lse_max_abs_error;
  std::printf("%s: rel err %.2e (baseline %.2e), lse err %.1e\n", what.c_str(), r.rel_error, r.baseline_rel_error,
              r.lse_max_abs_error);
}

bool quick() { return std::getenv("ATTNPROF_QUICK") != nullptr; }  // under compute-sanitizer

}  // namespace

TEST(CudaDecodeAttention, ShortCachesMatchFp64AtEverySplitCount) {
  ATTNPROF_REQUIRE_GPU();
  std::vector<Case> all = small_cases();
  for (std::size_t i = 0; i < all.size(); i += quick() ? 7 : 1) check(all[i]);
}

TEST(CudaDecodeAttention, LongCachesMatchFp64) {
  ATTNPROF_REQUIRE_GPU();
  // Under compute-sanitizer: every 6th case up to 4096 keys.
  std::vector<Case> all = long_cases();
  for (std::size_t i = 0; i < all.size(); ++i)
    if (!quick() || (all[i].Sk <= 4096 && i % 6 == 0)) check(all[i]);
}

TEST(CudaDecodeAttention, RowsThatSeeNoKeyAreZerosWithLseMinusInfinity) {
  ATTNPROF_REQUIRE_GPU();
  for (const Case& c : offset_cases()) check(c);
}

// More (batch, kv head, row block) columns than the 4096 arrival counters first made: 520 · 8 =
// 4160 columns of 2 splits, so the launcher grows the counter buffer (a new one, zeroed).
TEST(CudaDecodeAttention, MoreColumnsThanCountersGrowTheCounters) {
  ATTNPROF_REQUIRE_GPU();
  if (quick()) GTEST_SKIP() << "4160 columns: too slow under compute-sanitizer (ATTNPROF_QUICK)";
  check({520, 8, 8, 1, 256, 64, false, Layout::bhsd, DType::bf16, 2});
  check({520, 8, 8, 1, 256, 64, false, Layout::bhsd, DType::bf16, 2});  // and they were left at zero
}

// The geometries bench/decode_configs times besides production's (a persistent grid, 2 warps of 6
// stages, 8 warps at one CTA per SM) against fp64: one split and many, GQA and MQA, causal rows
// that see no key, a split count that leaves a persistent CTA several items.
TEST(CudaDecodeAttention, OtherGeometriesMatchFp64) {
  ATTNPROF_REQUIRE_GPU();
  const std::vector<Case> cases = {
      {8, 32, 8, 1, 4096, 128, false, Layout::bhsd, DType::bf16, 0},
      {2, 8, 2, 16, 4096, 128, true, Layout::bshd, DType::bf16, 7},
      {1, 4, 1, 16, 799, 64, true, Layout::bhsd, DType::bf16, 1},
      {2, 4, 1, 5, 4096, 128, true, Layout::bhsd, DType::bf16, 128, -3},  // rows 0-2 see nothing
      {4, 8, 2, 1, 16384, 128, false, Layout::bhsd, DType::bf16, 128},  // 1024 items: a persistent CTA takes several
  };
  for (int g = 0; g < cuda::decode_testing::kGeometries; ++g)
    for (std::size_t i = 0; i < cases.size(); ++i)
      if (cuda::decode_testing::geometry_takes(g, cases[i].D) && (!quick() || cases[i].Sk <= 4096)) check(cases[i], g);
}

// flash's one-CTA plans of 2 splits merge them in thread block clusters, with no workspace (plans
// forced to the one-CTA geometry at 2 splits): every row against fp64, GQA with 4 row blocks, MQA
// with 2, causal and not, fp16 and bshd, rows that see no key of the second split; and forced 3
// and 5 splits on the same geometry, which merge through the workspace.
TEST(CudaDecodeAttention, OneCtaPlansMergeTwoSplitsInClusters) {
  ATTNPROF_REQUIRE_HOPPER();  // the one-CTA geometry's 196 KiB and its clusters
  struct Forced {
    Case c;
    bool clusters;
  };
  const std::vector<Forced> cases = {
      {{8, 32, 8, 1, 4096, 128, false, Layout::bhsd, DType::bf16, 2}, true},
      {{2, 8, 2, 16, 4096, 128, true, Layout::bshd, DType::fp16, 2}, true},  // 64 rows: 4 row blocks
      {{2, 4, 1, 5, 1000, 128, true, Layout::bhsd, DType::bf16, 2}, true},   // MQA, 20 rows: 2 row blocks
      // 261 keys in 2 splits of 256: rows 0-10 see none of the second (its LSE −inf for them).
      {{1, 8, 2, 16, 1000, 128, true, Layout::bhsd, DType::bf16, 2, 245}, true},
      {{2, 8, 2, 16, 4096, 128, true, Layout::bhsd, DType::bf16, 5}, false},
      {{1, 8, 2, 3, 4096, 128, false, Layout::bshd, DType::bf16, 3}, false},
  };
  for (const Forced& f : cases) {
    cuda::DecodePlan plan;
    check(f.c, -1, true, &plan);
    cuda::DecodeShape shape = cuda::DecodeShape::of(spec_of(f.c));
    if (f.c.causal_offset) shape.causal_offset = *f.c.causal_offset;
    const std::string what = describe(f.c, plan);
    EXPECT_EQ(plan.splits, f.c.splits) << what;
    EXPECT_EQ(plan.merges_in_clusters(), f.clusters) << what;
    EXPECT_EQ(plan.workspace_bytes(shape) == 0, f.clusters) << what << ": a cluster merge needs no workspace";
  }
}

// The device's own plan: on an H200 (132 SMs, 227 KiB a CTA, compute capability 9.0) 8x32/8 takes
// one CTA an SM at 2 splits, merged in clusters.
TEST(CudaDecodeAttention, TheH200sPlanForLlamaDecodeMergesInClusters) {
  ATTNPROF_REQUIRE_GPU();
  const Case c{8, 32, 8, 1, 32768, 128, false, Layout::bhsd, DType::bf16, 0};
  const cuda::DecodePlan plan = cuda::flash_decode_plan(cuda::DecodeShape::of(spec_of(c)));
  if (!plan.merges_in_clusters())
    GTEST_SKIP() << describe(c, plan) << ": the device's own plan does not merge in clusters here (an H200's does)";
  check(c);
}

// The merge sums the splits in split order whichever CTA arrives last: launches on NaN-poisoned
// O and LSE give the same bits; launches of other shapes and split counts in between (sharing the
// arrival counters) must leave the counters at zero, or a later launch would merge early (NaN or
// wrong rows) or never (poison left). Outside ATTNPROF_QUICK the last case (8x32/8, the device's
// plan) merges in clusters on an H200, whose merge must be as repeatable.
TEST(CudaDecodeAttention, RepeatedLaunchesAreBitIdenticalAndLeaveTheCountersAtZero) {
  ATTNPROF_REQUIRE_GPU();
  struct Run {
    Case c;
    Tensor q, k, v, out, lse;
    cuda::FusedAttentionArgs args;
    cuda::DecodePlan plan;
  };
  const std::int64_t batch = quick() ? 2 : 8;  // under compute-sanitizer, fewer columns
  std::vector<Case> cases = {{batch, 32, 8, 1, 4096, 128, false, Layout::bhsd, DType::bf16, 7},
                             {2, 8, 2, 16, 1000, 64, true, Layout::bshd, DType::fp16, 128},
                             {batch, 32, 8, 1, 4096, 128, false, Layout::bhsd, DType::bf16, 0}};
  std::vector<Run> runs;
  std::uint64_t seed = 61;
  for (const Case& c : cases) {
    Run r{c, {}, {}, {}, {}, {}, {}, {}};
    const AttentionSpec spec = spec_of(c);
    r.q = in_layout(random_host({c.B, c.H, c.Sq, c.D}, c.dtype, seed++), c.layout);
    r.k = in_layout(random_host({c.B, c.Hkv, c.Sk, c.D}, c.dtype, seed++), c.layout);
    r.v = in_layout(random_host({c.B, c.Hkv, c.Sk, c.D}, c.dtype, seed++), c.layout);
    r.out = empty_in_layout({c.B, c.H, c.Sq, c.D}, c.dtype, c.layout);
    r.lse = Tensor::empty({c.B, c.H, c.Sq}, DType::fp32, Device::cuda);
    r.args = cuda::fused_attention_args(spec, r.out, r.q, r.k, r.v, &r.lse);
    const cuda::DecodeShape shape = cuda::DecodeShape::of(r.args);
    r.plan = c.splits == 0 ? cuda::flash_decode_plan(shape) : cuda::decode_plan_with_splits(shape, c.splits);
    ASSERT_GT(r.plan.splits, 1) << describe(c, r.plan) << ": the case must merge splits";
    runs.push_back(std::move(r));
  }
  auto launch = [](Run& r) {
    poison(r.out);
    poison(r.lse);
    cuda::launch_decode_attention(r.args, r.plan, cuda::backend_stream());
    gpu().synchronize();
    return std::make_pair(to_host(r.out), to_host(r.lse));
  };
  std::vector<std::pair<Tensor, Tensor>> first;
  for (Run& r : runs) first.push_back(launch(r));
  for (std::size_t i = 0; i < runs.size(); ++i)
    for (const Tensor* t : {&first[i].first, &first[i].second}) {
      std::int64_t bad = 0;
      for (std::int64_t e = 0; e < t->numel(); ++e) bad += std::isfinite(get(*t, e)) ? 0 : 1;
      EXPECT_EQ(bad, 0) << describe(runs[i].c, runs[i].plan) << ": elements left NaN or non-finite on the first launch";
    }
  const int rounds = quick() ? 3 : 20;
  for (int round = 0; round < rounds; ++round)
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const auto again = launch(runs[i]);
      EXPECT_TRUE(cuda::flash_testing::same_bits(first[i].first, again.first))
          << describe(runs[i].c, runs[i].plan) << ": O differs from the first launch's on round " << round;
      EXPECT_TRUE(cuda::flash_testing::same_bits(first[i].second, again.second))
          << describe(runs[i].c, runs[i].plan) << ": the LSE differs from the first launch's on round " << round;
    }
  // The first launches were right, not merely repeatable.
  for (const Case& c : cases) check(c);
}

// flash through the backend on decode shapes (Llama's 32 query heads on 8 kv heads, one query
// row): the device's plan must run the decode kernels, and the result match fp64. 16 columns: on
// an H200 the plan takes the one-CTA geometry, in bf16 and fp16.
TEST(CudaDecodeAttention, FlashTakesTheDecodePathOnDecodeShapes) {
  ATTNPROF_REQUIRE_GPU();
  const std::pair<std::int64_t, DType> runs[] = {{512, DType::bf16}, {4097, DType::bf16}, {4097, DType::fp16}};
  for (const auto& [sk, dtype] : runs) {
    const Case c{2, 32, 8, 1, sk, 128, true, Layout::bhsd, dtype, 0};
    const AttentionSpec spec = spec_of(c);
    const cuda::DecodeShape shape = cuda::DecodeShape::of(spec);
    const cuda::DecodePlan plan = cuda::flash_decode_plan(shape);
    ASSERT_TRUE(plan.runs()) << describe(c, plan) << ": flash would not run the decode kernels";
    EXPECT_EQ(gpu().fused_workspace_bytes(spec, true), ops::Backend::log_sum_exp_bytes(spec) + plan.workspace_bytes(shape))
        << "the decode workspace must be counted";
    EXPECT_EQ(gpu().fused_workspace_bytes(spec, false), ops::Backend::log_sum_exp_bytes(spec))
        << "efficient runs its own kernel, with no decode workspace";
    Tensor qh = random_host({c.B, c.H, c.Sq, c.D}, c.dtype, 51), kh = random_host({c.B, c.Hkv, c.Sk, c.D}, c.dtype, 52),
           vh = random_host({c.B, c.Hkv, c.Sk, c.D}, c.dtype, 53);
    Tensor q = to_device(qh), k = to_device(kh), v = to_device(vh);
    Tensor out = Tensor::empty({c.B, c.H, c.Sq, c.D}, c.dtype, Device::cuda);
    Tensor lse = Tensor::empty({c.B, c.H, c.Sq}, DType::fp32, Device::cuda);
    poison(out);
    poison(lse);
    gpu().attention_flash(spec, out, q, k, v, &lse);
    gpu().synchronize();
    const Tensor lse_host = to_host(lse);
    const ReferenceResult r = compare_with_fp64(spec, qh, kh, vh, to_host(out), &lse_host);
    EXPECT_EQ(r.non_finite, 0) << describe(c, plan);
    EXPECT_LE(r.rel_error, 2.0 * r.baseline_rel_error + 2e-4) << describe(c, plan) << " baseline " << r.baseline_rel_error;
    EXPECT_LE(r.lse_max_abs_error, 1e-3) << describe(c, plan);
  }
}

TEST(CudaDecodeAttention, APlanForAnotherShapeIsRefused) {
  ATTNPROF_REQUIRE_GPU();
  const Case c{1, 2, 2, 1, 1024, 64, false, Layout::bhsd, DType::bf16, 2};
  const AttentionSpec spec = spec_of(c);
  Tensor q = Tensor::empty({1, 2, 1, 64}, DType::bf16, Device::cuda), k = Tensor::empty({1, 2, 1024, 64}, DType::bf16, Device::cuda);
  Tensor out = Tensor::empty({1, 2, 1, 64}, DType::bf16, Device::cuda);
  const cuda::FusedAttentionArgs args = cuda::fused_attention_args(spec, out, q, k, k, nullptr);
  cuda::DecodeShape other = cuda::DecodeShape::of(args);
  other.seq_k = 4096;
  EXPECT_THROW(cuda::launch_decode_attention(args, cuda::decode_plan_with_splits(other, 2), cuda::backend_stream()),
               Error);
}
