// The backward's insights of real CPU runs, through the binary: `run --pass train|backward` on
// each kind of backward (naive's and math's saved probabilities, flash's recomputed scores, the GQA
// group sum of dK/dV), `inspect` of the trace a run wrote, and forward runs, which get none of
// them. Every number is worked out by hand from the shape in the test.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "cli/cli_runner.h"

using attnprof::testing::CliResult;
using attnprof::testing::run_cli;

namespace {

const char* const kBackwardCodes[] = {"probabilities_kept", "scores_recomputed", "dkdv_reduction"};

// B 1, H 4 on 2 kv heads (GQA, 2 query heads per group), S 64, D 32, bf16 (the default), causal
// (the default), one kept step, a trace under {work}/t.
std::vector<std::string> gqa_run(const std::string& variant, const std::string& pass) {
  return {"run",     "--device", "cpu", "--pass",  pass, "-v",     variant, "-b", "1", "--heads", "4", "--kv-heads", "2",
          "-s",      "64",       "-d",  "32",      "--active", "1", "--min-time", "0", "--threads", "1",
          "--format", "json",    "--out", "{work}/t"};
}

// code → text of a run's JSON insights.
std::map<std::string, std::string> insights_of(const CliResult& r) {
  std::map<std::string, std::string> out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  for (const auto& i : j.at("insights")) out[i.at("code").get<std::string>()] = i.at("text").get<std::string>();
  return out;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(BackwardInsightsCli, NaiveTrainStepKeepsItsProbabilitiesAndSumsTheGroups) {
  CliResult r = run_cli(gqa_run("naive", "train"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto codes = insights_of(r);
  // P [1, 4, 64, 64] bf16: 1·4·64·64·2 B = 32,768 B = 32.0 KiB; the LSE 1·4·64·4 B = 1,024 B = 1.0
  // KiB, 32× less.
  EXPECT_TRUE(contains(codes["probabilities_kept"], "(bf16): 1·4·64·64·2 B = 32.0 KiB kept from the forward per step"))
      << r.out;
  EXPECT_TRUE(contains(codes["probabilities_kept"], "1·4·64·4 B = 1.0 KiB (32× less)")) << r.out;
  // dV's and dK's ExpandBackward0 sums, one each per step.
  EXPECT_TRUE(contains(codes["dkdv_reduction"], "GQA, 2 query heads per kv head (4 → 2)")) << r.out;
  EXPECT_TRUE(contains(codes["dkdv_reduction"], "ExpandBackward0 › aten::sum: 2 per step")) << r.out;
  EXPECT_FALSE(codes.count("scores_recomputed")) << r.out;
  std::filesystem::remove_all(r.work_dir);
}

TEST(BackwardInsightsCli, MathKeepsFp32Probabilities) {
  CliResult r = run_cli(gqa_run("math", "backward"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // math's softmax runs in fp32: 1·4·64·64·4 B = 65,536 B = 64.0 KiB, 64× the LSE's 1.0 KiB.
  EXPECT_TRUE(contains(insights_of(r)["probabilities_kept"], "(fp32): 1·4·64·64·4 B = 64.0 KiB kept from the forward "
                                                             "per step"))
      << r.out;
  EXPECT_TRUE(contains(insights_of(r)["probabilities_kept"], "(64× less)")) << r.out;
  std::filesystem::remove_all(r.work_dir);
}

TEST(BackwardInsightsCli, FlashBackwardRecomputesScoresAndSumsWithoutAtomics) {
  CliResult r = run_cli(gqa_run("flash", "backward"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto codes = insights_of(r);
  // Q·Kᵀ: causal 64×64 leaves 64·65/2 = 2,080 of 4,096 pairs visible: 2·1·4·32·2,080 = 532,480
  // FLOP; five GEMMs: 2,662,400 = 2.66 MFLOP.
  EXPECT_TRUE(contains(codes["scores_recomputed"], "2·1·4·64·64·32 FLOP, over the 2080 of 4096 pairs the causal mask "
                                                   "leaves visible = 532,480 FLOP per step"))
      << r.out;
  EXPECT_TRUE(contains(codes["scores_recomputed"], "20% of its 2.66 MFLOP")) << r.out;
  EXPECT_TRUE(contains(codes["scores_recomputed"], "1·4·64·64·2 B = 32.0 KiB per step")) << r.out;
  EXPECT_TRUE(contains(codes["dkdv_reduction"], "without atomics")) << r.out;
  EXPECT_FALSE(codes.count("probabilities_kept")) << r.out;

  // inspect of the trace the run wrote: the same rules, the shape read from the trace (causal not
  // recorded: the full count, 1,048,576 = 1.05 MFLOP, said to be fewer with a causal mask).
  std::string trace;
  for (const std::string& f : r.files)
    if (f.size() > 8 && f.compare(f.size() - 8, 8, ".json.gz") == 0) trace = r.work_dir + "/" + f;
  ASSERT_FALSE(trace.empty());
  CliResult inspected = run_cli({"inspect", "--format", "json", trace});
  ASSERT_EQ(inspected.exit_code, 0) << inspected.err;
  auto seen = insights_of(inspected);
  EXPECT_TRUE(contains(seen["scores_recomputed"], "2·1·4·64·64·32 FLOP (fewer with a causal mask) = 1.05 MFLOP"))
      << inspected.out;
  EXPECT_TRUE(contains(seen["dkdv_reduction"], "GQA, 2 query heads per kv head")) << inspected.out;
  std::filesystem::remove_all(r.work_dir);
  std::filesystem::remove_all(inspected.work_dir);
}

TEST(BackwardInsightsCli, ForwardRunsGetNoBackwardInsight) {
  for (const char* variant : {"naive", "flash"}) {
    CliResult r = run_cli(gqa_run(variant, "forward"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto codes = insights_of(r);
    for (const char* code : kBackwardCodes) EXPECT_FALSE(codes.count(code)) << variant << ": " << code << "\n" << r.out;
    std::filesystem::remove_all(r.work_dir);
  }
}

}  // namespace
