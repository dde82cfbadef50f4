// The insight rules on whole-model traces: attention rules speak of the attention calls alone
// (tests/data/model-traces, recorded on the H200 by scripts/record_model_traces.py) and say
// nothing on the public traces of models without attention (../shared/traces/public); the
// per-forward CPU-against-GPU claim is not made of a model's steps; low occupancy is "by design"
// only of kernels whose design is known, and each insight says which kernels or calls it is about.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "report/insights.h"
#include "report_insights/insight_test_util.h"
#include "trace/reader.h"

namespace attnprof::report {
namespace {

const std::set<std::string> kAttentionRules = {"hidden_copy",      "mask_rebuilt",       "safe_softmax",
                                                "s2_materialized",  "single_fused_kernel", "warp_specialized",
                                                "split_kv_decode",  "probabilities_kept", "scores_recomputed",
                                                "dkdv_reduction"};

std::set<std::string> codes_of(const std::string& path) {
  std::set<std::string> out;
  for (const Insight& i : derive_insights(trace::read_trace_file(path), {})) out.insert(i.code);
  return out;
}

// The insight of this code, or an empty one (code "") when it did not fire.
Insight insight_of(const std::vector<Insight>& insights, const std::string& code) {
  for (const Insight& i : insights)
    if (i.code == code) return i;
  return {};
}

bool about_has(const Insight& insight, const std::string& part) {
  for (const std::string& name : insight.about)
    if (name.find(part) != std::string::npos) return true;
  return false;
}

std::filesystem::path public_dir() {
  return std::filesystem::path(source_dir()) / ".." / "shared" / "traces" / "public";
}

TEST(ModelTraceInsights, ComposedAttentionShowsItsCopyAndItsMaskInsideTheCalls) {
  auto codes = codes_of(model("gpt_train_naive"));
  EXPECT_TRUE(codes.count("hidden_copy"));   // masked_fill out of place, inside each call
  EXPECT_TRUE(codes.count("mask_rebuilt"));  // ones + tril in every call
  EXPECT_FALSE(codes.count("single_fused_kernel"));
  EXPECT_FALSE(codes.count("cpu_bound"));
}

// Known answers from python3 over the gzipped JSON: the 8 forward attention calls (matmul →
// softmax over [8, 4, 256, 256] → matmul on one thread) launch 24 GPU items whose innermost
// non-copy op is aten::reshape, all of one kernel (elementwise_kernel<128, 4, ...direct_copy_kernel_cuda
// ...BFloat16...>): 3 launches and 10.528 µs per call of 48.624 µs of the call's work (21.65%);
// aten::masked_fill's 8 items are one Memcpy DtoD per call, 2.396 µs (4.93%).
TEST(ModelTraceInsights, HiddenCopyCountsEveryCopyKernelLaunch) {
  const auto naive = derive_insights(trace::read_trace_file(model("gpt_train_naive")), {});
  const std::string text = insight_of(naive, "hidden_copy").text;
  EXPECT_NE(text.find("aten::reshape could not return a view and copied (3 copy kernels, 10.5 \u00b5s per forward, "
                      "22% of the forward's work)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("(Memcpy DtoD, 4.0 MiB, 2.4 \u00b5s per forward, 5% of the forward's work)"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("a copy kernel"), std::string::npos) << text;
}

TEST(ModelTraceInsights, FusedAttentionIsOneKernelAndNothingOfTheRestOfTheModel) {
  for (const char* stem : {"gpt_train_sdpa_cudnn", "gpt_decode_kvcache_gqa"}) {
    auto codes = codes_of(model(stem));
    EXPECT_TRUE(codes.count("single_fused_kernel")) << stem;
    // the model's LayerNorm, GELU and AdamW kernels sit outside the attention calls
    for (const char* silent : {"hidden_copy", "mask_rebuilt", "s2_materialized", "cpu_bound"})
      EXPECT_FALSE(codes.count(silent)) << stem << ": " << silent;
  }
}

TEST(ModelTraceInsights, LowOccupancyByDesignOnlyOfKernelsOfKnownDesign) {
  // cuDNN's SDPA kernel and cuBLAS's nvjet GEMMs: by design. The compiled FlexAttention kernel
  // (Triton) is not of a documented design: plain low occupancy, about that kernel.
  const auto cudnn = derive_insights(trace::read_trace_file(model("gpt_train_sdpa_cudnn")), {});
  const Insight by_design = insight_of(cudnn, "low_occupancy_by_design");
  EXPECT_TRUE(about_has(by_design, "cudnn_generated_fort_native_sdpa_sm90_flash_fprop")) << by_design.text;
  EXPECT_TRUE(about_has(by_design, "nvjet_sm90")) << by_design.text;
  EXPECT_EQ(insight_of(cudnn, "low_occupancy").code, "");
  const auto flex = derive_insights(trace::read_trace_file(model("gpt_train_flex_compiled")), {});
  const Insight plain = insight_of(flex, "low_occupancy");
  EXPECT_EQ(plain.about, std::vector<std::string>{"triton_tem_fused_flex_attention_0"}) << plain.text;
  EXPECT_FALSE(about_has(insight_of(flex, "low_occupancy_by_design"), "triton")) << plain.text;
}

// The decode trace records 0% for all its kernels (python3 over its JSON: every "est. achieved
// occupancy %" is 0; deviceProperties: 132 SMs, sharedMemPerBlock 49,152). The nvjet GEMMs ask for
// 164,308 B of shared memory; cuDNN's SDPA kernel runs a grid of [1, 2, 4] = 8 CTAs of 128 threads
// (Kineto's own "blocks per SM" 0.060606 = 8/132), 3 blocks an SM by its 142 registers.
TEST(ModelTraceInsights, DecodeTracesZeroOccupancyIsExplainedAndCappedByTheGrid) {
  const auto decode = derive_insights(trace::read_trace_file(model("gpt_decode_kvcache_gqa")), {});
  const Insight zero = insight_of(decode, "occupancy_recorded_zero");
  EXPECT_NE(zero.text.find("for 11 kernels;"), std::string::npos) << zero.text;
  EXPECT_EQ(zero.text.find("driver"), std::string::npos) << zero.text;
  EXPECT_NE(zero.text.find("no block of 164,308 B fits the 49,152 B Kineto's calculator assumes"), std::string::npos)
      << zero.text;
  // nvjet's [4, 8, 1] grid: 32 CTAs of 132 SMs × 1 block.
  EXPECT_NE(zero.text.find("32/132 of 18.75% = 4.55% of the GPU's warps at most"), std::string::npos) << zero.text;
  // cuDNN: min(3, 8/132) × 128 / 2,048 = 0.38%.
  EXPECT_NE(zero.text.find("8 CTAs / 132 SMs \u00d7 128 threads / 2,048 = 0.38%"), std::string::npos) << zero.text;
  const Insight design = insight_of(decode, "low_occupancy_by_design");
  EXPECT_NE(design.text.find("8/396 of 18.75% = 0.38% of the GPU's warps at most"), std::string::npos) << design.text;
}

TEST(ModelTraceInsights, PublicTracesGetPlainLowOccupancyAndGemmsByEvidence) {
  const std::filesystem::path alexnet =
      public_dir() / "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz";
  if (!std::filesystem::exists(alexnet)) GTEST_SKIP() << alexnet << " is not present (a clone without ../shared)";
  const auto insights = derive_insights(trace::read_trace_file(alexnet.string()), {});
  // cuDNN's convolutions and cuBLAS's sgemm at low occupancy: said, but not as their design.
  const Insight low = insight_of(insights, "low_occupancy");
  EXPECT_TRUE(about_has(low, "scudnn")) << low.text;
  EXPECT_EQ(insight_of(insights, "low_occupancy_by_design").code, "");
  // fp32 GEMMs off the tensor cores: real sgemm kernels, named as such.
  const Insight fp32 = insight_of(insights, "fp32_gemm_cuda_cores");
  ASSERT_FALSE(fp32.about.empty()) << fp32.text;
  for (const std::string& kernel : fp32.about) EXPECT_NE(kernel.find("gemm"), std::string::npos) << kernel;
}

TEST(ModelTraceInsights, NoAttentionRuleFiresOnPublicTracesOfOtherModels) {
  const std::filesystem::path dir = public_dir();
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << dir << " is not present (a clone without ../shared)";
  int read = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.find(".json") == std::string::npos || name.find("execution_trace") != std::string::npos) continue;
    ++read;
    for (const Insight& i : derive_insights(trace::read_trace_file(entry.path().string()), {})) {
      EXPECT_FALSE(kAttentionRules.count(i.code)) << name << ": " << i.code;
      EXPECT_NE(i.code, "cpu_bound") << name;
      // none of these models runs a kernel of documented design
      EXPECT_NE(i.code, "low_occupancy_by_design") << name << ": " << i.text;
      EXPECT_FALSE(i.about.empty()) << name << ": " << i.code;
    }
  }
  EXPECT_GE(read, 9);
}

}  // namespace
}  // namespace attnprof::report
