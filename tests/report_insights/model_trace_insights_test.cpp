// The insight rules on whole-model traces: attention rules speak of the attention calls alone
// (tests/data/model-traces, recorded on the H200 by scripts/record_model_traces.py) and say
// nothing on the public traces of models without attention (../shared/traces/public); the
// per-forward CPU-against-GPU claim is not made of a model's steps.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "report/insights.h"
#include "trace/reader.h"

namespace attnprof::report {
namespace {

const std::set<std::string> kAttentionRules = {"hidden_copy",    "mask_rebuilt",       "safe_softmax",
                                                "s2_materialized", "single_fused_kernel", "warp_specialized"};

std::string source_dir() {
  const char* dir = std::getenv("ATTNPROF_SOURCE_DIR");
  return dir ? dir : ATTNPROF_TEST_SOURCE_DIR;
}

std::set<std::string> codes_of(const std::string& path) {
  std::set<std::string> out;
  for (const Insight& i : derive_insights(trace::read_trace_file(path), {})) out.insert(i.code);
  return out;
}

std::string model(const std::string& stem) { return source_dir() + "/tests/data/model-traces/" + stem + ".json.gz"; }

TEST(ModelTraceInsights, ComposedAttentionShowsItsCopyAndItsMaskInsideTheCalls) {
  auto codes = codes_of(model("gpt_train_naive"));
  EXPECT_TRUE(codes.count("hidden_copy"));   // masked_fill out of place, inside each call
  EXPECT_TRUE(codes.count("mask_rebuilt"));  // ones + tril in every call
  EXPECT_FALSE(codes.count("single_fused_kernel"));
  EXPECT_FALSE(codes.count("cpu_bound"));
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

TEST(ModelTraceInsights, NoAttentionRuleFiresOnPublicTracesOfOtherModels) {
  const std::filesystem::path dir = std::filesystem::path(source_dir()) / ".." / "shared" / "traces" / "public";
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << dir << " is not present (a clone without ../shared)";
  int read = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.find(".json") == std::string::npos || name.find("execution_trace") != std::string::npos) continue;
    ++read;
    for (const std::string& code : codes_of(entry.path().string())) {
      EXPECT_FALSE(kAttentionRules.count(code)) << name << ": " << code;
      EXPECT_NE(code, "cpu_bound") << name;
    }
  }
  EXPECT_GE(read, 9);
}

}  // namespace
}  // namespace attnprof::report
