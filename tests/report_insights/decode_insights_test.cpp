// split_kv_decode and decode_bandwidth (src/report/decode_insights.cpp): they fire on a trace of
// attnprof's and FlashAttention 2's split-KV kernels, with the numbers worked out by hand, and stay
// silent on decode without split-KV (cuDNN's kernel in a model's KV-cache decode), on PyTorch's flash
// forward and on cuBLAS's split-K GEMM reductions (tests/report_insights/model_trace_insights_test.cpp
// adds the public traces of other models).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "report/decode_insights.h"
#include "report/insights.h"
#include "report_insights/insight_test_util.h"
#include "report_insights/synthetic_trace.h"
#include "trace/reader.h"

namespace attnprof::report {
namespace {

// Llama decode: batch 8, 32 query heads on 8 kv heads, one row, seq-k 32768, D 128, bf16,
// causal bottom-right: K and V are 2 · 8 · 8 · 32768 · 128 · 2 B = 1 GiB.
AttentionSpec llama_decode() {
  AttentionSpec s;
  s.batch = 8;
  s.heads = 32;
  s.kv_heads = 8;
  s.seq_q = 1;
  s.seq_k = 32768;
  s.head_dim = 128;
  s.dtype = DType::bf16;
  s.causal = true;
  s.causal_align = CausalAlign::bottom_right;
  s.device = Device::cuda;
  return s;
}

// Three forwards of a split kernel (230 µs, the grid given) and, when named, its combine kernel (4 µs).
trace::Trace split_trace(const std::string& split, const std::string& combine, std::array<std::int64_t, 3> grid) {
  testing::TraceBuilder b;
  b.add_h200();
  for (std::int64_t t0 : {0, 1000000, 2000000}) {
    b.forward(t0, 300000);
    b.op("aten::_scaled_dot_product_flash_attention", t0 + 10, 200);
    trace::KernelLaunch launch = testing::footprint(179, 128, 102400);
    launch.grid = grid;
    b.kernel(split, t0 + 40, t0 + 1000, 230000).launch = launch;
    if (!combine.empty()) b.kernel(combine, t0 + 60, t0 + 231000, 4000).launch = testing::footprint(32, 128, 0);
  }
  return b.trace;
}

const char* kOurSplit =
    "void attnprof::cuda::decode::flash_decode_splitkv_kernel<128, __nv_bfloat16, attnprof::cuda::decode::"
    "DecodeGeometry<4, 3, 8, 2, false, 0> >(attnprof::cuda::FusedAttentionArgs, attnprof::cuda::decode::DecodeParams)";
const char* kFa2Split =
    "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, "
    "cutlass::bfloat16_t>, false, false, false, false, true, false, true, false>(Flash_fwd_params)";
const char* kFa2Combine =
    "void flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, "
    "cutlass::bfloat16_t>, 4, 5, false>(Flash_fwd_params)";

TEST(SplitKvDecode, NamesTheSplitsWhereTheyMergeAndTheKvRate) {
  RunFacts facts;
  facts.spec = llama_decode();
  const auto insights = derive_insights(split_trace(kOurSplit, "", {64, 13, 1}), facts);
  const Insight* decode = find(insights, "split_kv_decode");
  ASSERT_NE(decode, nullptr);
  const std::string& text = decode->text;
  // 64 · 13 = 832 CTAs; 1 GiB over the forward's (= the split kernel's) 230 µs = 4.67 TB/s.
  EXPECT_NE(text.find("flash_decode_splitkv_kernel: split-KV decoding, the keys in 13 splits (the grid's y), 832 CTAs "
                      "of 128 threads (230.0 µs per forward)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("no combine kernel: the merge is in the split kernel, where the last CTA of each (batch, kv "
                      "head, row block) to finish merges the splits' partial outputs by their log-sum-exp and writes O"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("combine_kernel"), std::string::npos) << "attnprof has no combine kernel to name: " << text;
  EXPECT_NE(text.find("K and V, 1.00 GiB per forward, read at 4.67 TB/s over the forward (4.67 TB/s in the split "
                      "kernel alone)"),
            std::string::npos)
      << text;
  EXPECT_EQ(decode->about.size(), 2u);  // the forward range and the split kernel
  // The split kernel's occupancy (2 CTAs of 4 warps per SM) is its design, not a finding.
  const Insight* by_design = find(insights, "low_occupancy_by_design");
  ASSERT_NE(by_design, nullptr);
  EXPECT_NE(by_design->text.find("attnprof's split-KV decode"), std::string::npos) << by_design->text;
  const Insight* plain = find(insights, "low_occupancy");
  EXPECT_TRUE(plain == nullptr || plain->text.find("splitkv") == std::string::npos) << plain->text;
}

// attnprof's one-CTA geometry merges items of 2 splits in thread block clusters (its
// DecodeGeometry's 7th argument), and of more through the workspace like the others.
TEST(SplitKvDecode, AClusterGeometryMergesTwoSplitsInClusters) {
  const std::string cluster =
      "void attnprof::cuda::decode::flash_decode_splitkv_kernel<128, __nv_bfloat16, attnprof::cuda::decode::"
      "DecodeGeometry<8, 3, 8, 1, false, 0, true> >(attnprof::cuda::FusedAttentionArgs, attnprof::cuda::decode::DecodeParams)";
  const auto two = derive_insights(split_trace(cluster, "", {64, 2, 1}), {});
  const Insight* decode = find(two, "split_kv_decode");
  ASSERT_NE(decode, nullptr);
  EXPECT_NE(decode->text.find("the keys in 2 splits (the grid's y), 128 CTAs of 128 threads"), std::string::npos)
      << decode->text;
  EXPECT_NE(decode->text.find("no combine kernel: the 2 CTAs of each (batch, kv head, row block) run as one thread block "
                              "cluster, and the first reads the others' partial outputs from their shared memory "
                              "(distributed shared memory), merges them by their log-sum-exp and writes O"),
            std::string::npos)
      << decode->text;
  // The same kernel as other tools print template arguments.
  const std::string casts =
      "void attnprof::cuda::decode::flash_decode_splitkv_kernel<(int)128, __nv_bfloat16, attnprof::cuda::decode::"
      "DecodeGeometry<(int)8, (int)3, (int)8, (int)1, (bool)0, (int)0, (bool)1>>(attnprof::cuda::FusedAttentionArgs, "
      "attnprof::cuda::decode::DecodeParams)";
  const auto cast_insights = derive_insights(split_trace(casts, "", {64, 2, 1}), {});
  const Insight* cast_decode = find(cast_insights, "split_kv_decode");
  ASSERT_NE(cast_decode, nullptr);
  EXPECT_NE(cast_decode->text.find("run as one thread block cluster"), std::string::npos) << cast_decode->text;
  EXPECT_EQ(cast_decode->text.find("a persistent grid"), std::string::npos) << cast_decode->text;
  EXPECT_EQ(decode->text.find("last CTA"), std::string::npos) << decode->text;
  const auto four = derive_insights(split_trace(cluster, "", {32, 4, 1}), {});
  decode = find(four, "split_kv_decode");
  ASSERT_NE(decode, nullptr);
  EXPECT_NE(decode->text.find("where the last CTA of each (batch, kv head, row block) to finish merges"), std::string::npos)
      << decode->text;
  EXPECT_EQ(decode->text.find("cluster"), std::string::npos) << decode->text;
  // The two-CTA geometry, its 7th argument false: the last CTA merges at 2 splits too.
  const std::string two_cta =
      "void attnprof::cuda::decode::flash_decode_splitkv_kernel<128, __nv_bfloat16, attnprof::cuda::decode::"
      "DecodeGeometry<4, 3, 8, 2, false, 0, false> >(attnprof::cuda::FusedAttentionArgs, attnprof::cuda::decode::DecodeParams)";
  const auto last_cta = derive_insights(split_trace(two_cta, "", {64, 2, 1}), {});
  decode = find(last_cta, "split_kv_decode");
  ASSERT_NE(decode, nullptr);
  EXPECT_NE(decode->text.find("where the last CTA"), std::string::npos) << decode->text;
}

TEST(SplitKvDecode, APersistentGridShowsNoSplitCount) {
  // attnprof's kernel on a persistent geometry: 264 CTAs (132 SMs × 2), grid y 1, several splits.
  const std::string persistent =
      "void attnprof::cuda::decode::flash_decode_splitkv_kernel<128, __nv_bfloat16, attnprof::cuda::decode::"
      "DecodeGeometry<4, 3, 8, 2, true, 256> >(attnprof::cuda::FusedAttentionArgs, attnprof::cuda::decode::DecodeParams)";
  const auto insights = derive_insights(split_trace(persistent, "", {264, 1, 1}), {});
  const Insight* decode = find(insights, "split_kv_decode");
  ASSERT_NE(decode, nullptr);
  EXPECT_EQ(decode->text.find("1 split"), std::string::npos) << "the grid's y is not the split count: " << decode->text;
  EXPECT_EQ(decode->text.find("each CTA wrote"), std::string::npos) << decode->text;
  EXPECT_NE(decode->text.find("flash_decode_splitkv_kernel: split-KV decoding (230.0 µs per forward); a persistent grid "
                              "(SMs × CTAs per SM looping over the work: the split count is not in the grid), no combine "
                              "kernel: with several splits the merge is in the split kernel"),
            std::string::npos)
      << decode->text;
}

TEST(SplitKvDecode, NamesACombineKernelAndItsShareOfTheForward) {
  RunFacts facts;
  facts.spec = llama_decode();
  const auto insights = derive_insights(split_trace(kFa2Split, kFa2Combine, {1, 13, 64}), facts);
  const Insight* decode = find(insights, "split_kv_decode");
  ASSERT_NE(decode, nullptr);
  const std::string& text = decode->text;
  // The combine's 4 µs of the forward's 234 µs = 1.71%; 1 GiB over 234 µs = 4.59 TB/s, over the
  // split kernel's 230 µs = 4.67 TB/s.
  EXPECT_NE(text.find("flash::flash_fwd_splitkv_combine_kernel merges the splits' partial outputs by their "
                      "log-sum-exp (4.0 µs per forward, 1.71% of the forward)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("K and V, 1.00 GiB per forward, read at 4.59 TB/s over the forward (4.67 TB/s in the split "
                      "kernel alone)"),
            std::string::npos)
      << text;
  EXPECT_EQ(decode->about.size(), 3u);  // the forward range and both kernels
}

TEST(SplitKvDecode, ACombineOverlappingTheSplitKernelCountsTheTimeItAdds) {
  // The combine launched with programmatic dependent launch: it starts 31 µs before the split kernel
  // ends and waits inside, so its recorded 35 µs hold the 4 µs it adds (the forward: 1 µs .. 235 µs,
  // 234 µs busy). The run's median (117 µs, as if measured elsewhere) is not the trace's: the share
  // is the trace's own, 4 / 234 = 1.71%, never the 35 µs against 117 (29.91%).
  testing::TraceBuilder b;
  b.add_h200();
  for (std::int64_t t0 : {0, 1000000}) {
    b.forward(t0, 300000);
    b.op("aten::_scaled_dot_product_flash_attention", t0 + 10, 200);
    b.kernel(kFa2Split, t0 + 40, t0 + 1000, 230000).launch = testing::footprint(179, 128, 102400);
    b.kernel(kFa2Combine, t0 + 60, t0 + 200000, 35000).launch = testing::footprint(32, 128, 0);
  }
  RunFacts facts;
  facts.spec = llama_decode();
  facts.device_ns_per_forward = 117000;
  const std::vector<Insight> insights = derive_insights(b.trace, facts);
  const Insight* decode = find(insights, "split_kv_decode");
  ASSERT_NE(decode, nullptr);
  EXPECT_NE(decode->text.find("flash::flash_fwd_splitkv_combine_kernel merges the splits' partial outputs by their "
                              "log-sum-exp (35.0 µs per forward, 4.0 µs of it after the other work: 1.71% of the "
                              "forward)"),
            std::string::npos)
      << decode->text;
}

// One forward (0 .. 300 µs) of FlashAttention 2's split kernel, [1, 231) µs, and its combine, [231, 235).
testing::TraceBuilder one_split_and_combine() {
  testing::TraceBuilder b;
  b.add_h200();
  b.forward(0, 300000);
  b.op("aten::_scaled_dot_product_flash_attention", 10, 200);
  b.kernel(kFa2Split, 40, 1000, 230000).launch = testing::footprint(179, 128, 102400);
  b.kernel(kFa2Combine, 60, 231000, 4000).launch = testing::footprint(32, 128, 0);
  return b;
}

TEST(SplitKvDecode, TwoOverlappingCombinesCountOnce) {
  // Two combine kernels of one forward overlapping in time, [231, 235) and [232, 236) µs: their union is
  // 5 µs, which is what they add to the forward (1 .. 236 µs: 235 µs busy): 5 / 235 = 2.13%.
  testing::TraceBuilder b = one_split_and_combine();
  b.kernel(kFa2Combine, 70, 232000, 4000).launch = testing::footprint(32, 128, 0);
  const std::vector<Insight> insights = derive_insights(b.trace, {});
  const Insight* decode = find(insights, "split_kv_decode");
  ASSERT_NE(decode, nullptr);
  EXPECT_NE(decode->text.find("log-sum-exp (5.0 µs per forward, 2.13% of the forward)"), std::string::npos)
      << decode->text;
}

TEST(SplitKvDecode, OtherWorkOfTheForwardIsNotTheCombines) {
  // A CPU kernel in the forward, [240, 290) µs, beside the split [1, 231) and the combine [231, 235):
  // the forward is busy 234 + 50 = 284 µs, of which the combine adds 4: 1.41% (not the 54 µs the
  // CPU kernel would add if it were counted as the combine's, 19.01%).
  testing::TraceBuilder b = one_split_and_combine();
  b.cpu_kernel("attnprof::cpu::copy", 240000, 50000);
  const std::vector<Insight> insights = derive_insights(b.trace, {});
  const Insight* decode = find(insights, "split_kv_decode");
  ASSERT_NE(decode, nullptr);
  EXPECT_NE(decode->text.find("log-sum-exp (4.0 µs per forward, 1.41% of the forward)"), std::string::npos)
      << decode->text;
}

TEST(SplitKvDecode, OneSplitHasNoCombineAndFlashAttention2sGridIsRead) {
  const auto one = derive_insights(split_trace(kOurSplit, "", {512, 1, 1}), {});
  const Insight* decode = find(one, "split_kv_decode");
  ASSERT_NE(decode, nullptr);
  EXPECT_NE(decode->text.find("the keys in 1 split (the grid's y), 512 CTAs"), std::string::npos) << decode->text;
  EXPECT_NE(decode->text.find("no combine kernel"), std::string::npos) << decode->text;
  EXPECT_EQ(decode->text.find("TB/s"), std::string::npos) << "no shape, no bytes: " << decode->text;
  // FlashAttention 2: grid (query blocks, splits, batch · heads).
  const auto fa2 = derive_insights(split_trace(kFa2Split, kFa2Combine, {1, 9, 256}), {});
  decode = find(fa2, "split_kv_decode");
  ASSERT_NE(decode, nullptr);
  EXPECT_NE(decode->text.find("flash::flash_fwd_splitkv_kernel: split-KV decoding, the keys in 9 splits (the grid's "
                              "y), 2,304 CTAs"),
            std::string::npos)
      << decode->text;
  EXPECT_NE(decode->text.find("flash::flash_fwd_splitkv_combine_kernel merges"), std::string::npos) << decode->text;
}

TEST(SplitKvDecode, SilentWithoutASplitKvAttentionKernel) {
  // cuBLAS's split-K reduction is a GEMM's, not attention's.
  testing::TraceBuilder b;
  b.add_h200();
  b.forward(0, 1000);
  b.kernel("void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, true, false, false>("
           "cublasLt::cublasSplitKParams<float>, float const*, float const*, float*, float const*, float const*, "
           "float const*, float const*, float*, void*, long, float*, int*)",
           10, 100, 50);
  EXPECT_EQ(find(derive_insights(b.trace, {}), "split_kv_decode"), nullptr);
  // A model's KV-cache decode on cuDNN's kernel (16-row tiles, no split), and PyTorch's flash forward.
  for (const std::string path : {source_dir() + "/tests/data/model-traces/gpt_decode_kvcache_gqa.json.gz",
                                 source_dir() + "/tests/data/pytorch-traces/8_16_1024_64_flash.json.gz"})
    EXPECT_EQ(find(derive_insights(trace::read_trace_file(path), {}), "split_kv_decode"), nullptr) << path;
}

TEST(DecodeBandwidth, TheRunsKvRateAgainstTheCopyCeiling) {
  RunResult result;
  result.spec = llama_decode();
  result.median_ns = 240000;
  Ceilings ceilings;
  ceilings.copy_gbps = 4800;
  ceilings.copy_what = "cudaMemcpy of 1 GiB";
  const std::vector<Insight> decode = {Insight{"split_kv_decode", "", {}}};
  // 1 GiB / 240 µs = 4474 GB/s = 93.21% of 4800.
  const auto note = decode_bandwidth(decode, result, ceilings);
  ASSERT_TRUE(note);
  EXPECT_EQ(note->text, "K and V (1.00 GiB per forward) read at 4474 GB/s over the median forward of 240.0 µs: 93.21% "
                        "of the measured copy ceiling, 4800 GB/s (cudaMemcpy of 1 GiB, read + write)");
  EXPECT_FALSE(decode_bandwidth({}, result, ceilings)) << "no split-KV kernel ran";
  EXPECT_FALSE(decode_bandwidth(decode, result, Ceilings{})) << "no ceiling measured";
}

}  // namespace
}  // namespace attnprof::report
