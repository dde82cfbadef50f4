// `inspect --what-if` through the binary: on a hand-built CPU trace with known step and call times,
// each variant's projected step is step − the replaced forward calls + the variant's median at
// their shape (worked out here from the trace as written and the medians the JSON reports); a
// shape the memory preflight refuses is reported as refused; a GPU trace on a machine without its
// GPU gets the one line that says why not; bad flags get one line and exit 2.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "cli/cli_runner.h"

using attnprof::testing::CliResult;
using attnprof::testing::make_temp_dir;
using attnprof::testing::run_cli;
using attnprof::testing::ScopedEnv;

namespace {

// One PyTorch CPU SDPA forward (the dispatcher op and its backend op inside it), q, k, v [dims].
struct Call {
  double ts_us, dur_us;
};

// A PyTorch-style CPU trace (no device work, no deviceProperties): per step its range, its SDPA
// forwards (fp32, is_causal=True, q, k, v of `dims`) and one SDPA backward node.
struct Step {
  double ts_us, dur_us;
  std::vector<Call> forwards;
  Call backward;
  std::string dims = "[1, 2, 64, 32]";
};

std::string op(const std::string& name, double ts, double dur, const std::string& args = "") {
  std::string e = R"({"ph": "X", "cat": "cpu_op", "name": ")" + name + R"(", "pid": 1, "tid": 1, "ts": )" +
                  std::to_string(ts) + R"(, "dur": )" + std::to_string(dur);
  if (!args.empty()) e += R"(, "args": )" + args;
  return e + "}";
}

std::string cpu_trace(const std::vector<Step>& steps) {
  std::vector<std::string> events;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    const std::string args = R"({"Input Dims": [)" + s.dims + "," + s.dims + "," + s.dims +
                             R"(, [], [], [], [], []], "Input type": ["float", "float", "float", "", "Scalar", )"
                             R"("Scalar", "", "Scalar"], "Concrete Inputs": ["", "", "", "", "0.", "True", "", "False"]})";
    events.push_back(R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#)" + std::to_string(i + 1) +
                     R"(", "pid": 1, "tid": 1, "ts": )" + std::to_string(s.ts_us) + R"(, "dur": )" +
                     std::to_string(s.dur_us) + "}");
    for (const Call& c : s.forwards) {
      events.push_back(op("aten::scaled_dot_product_attention", c.ts_us, c.dur_us, args));
      events.push_back(op("aten::_scaled_dot_product_flash_attention_for_cpu", c.ts_us + 1, c.dur_us - 2));
    }
    events.push_back(op("autograd::engine::evaluate_function: ScaledDotProductFlashAttentionForCpuBackward0",
                        s.backward.ts_us, s.backward.dur_us));
  }
  std::string out = R"({"schemaVersion": 1, "deviceProperties": [], "traceEvents": [)";
  for (std::size_t i = 0; i < events.size(); ++i) out += (i ? ",\n" : "\n") + events[i];
  return out + "\n]}\n";
}

std::string write_trace(const std::string& text) {
  const std::string path = make_temp_dir() + "/cpu_trace.json";
  std::ofstream(path) << text;
  return path;
}

// Two steps of 2000 and 2200 µs, each with two forwards (610 and 650 µs together) and a backward
// (400 and 500 µs), at 1x2x64x32 fp32 causal.
const std::vector<Step> kSteps = {
    {1000, 2000, {{1100, 300}, {1500, 310}}, {2000, 400}},
    {3100, 2200, {{3200, 320}, {3600, 330}}, {4000, 500}},
};
constexpr double kStepUs[] = {2000, 2200};
constexpr double kReplacedUs[] = {610, 650};

bool near(double a, double b) { return std::abs(a - b) <= 1e-6 * std::max(1.0, std::abs(b)); }

TEST(WhatIfCli, ProjectsEachStepFromTheTraceAndTheMeasuredMedians) {
  ScopedEnv threads("OMP_NUM_THREADS", "1");  // a steadier CPU time on a shared machine
  const std::string path = write_trace(cpu_trace(kSteps));
  CliResult r = run_cli({"inspect", path, "--what-if", "--variants", "naive,flash,cudnn", "--format", "json",
                         "--no-insights"}, 600);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json w = nlohmann::json::parse(r.out).at("what_if");
  ASSERT_TRUE(w.at("ran").get<bool>()) << w.dump();
  EXPECT_EQ(w.at("device"), "cpu");
  ASSERT_EQ(w.at("shapes").size(), 1u);
  const nlohmann::json& shape = w.at("shapes")[0];
  EXPECT_EQ(shape.at("batch"), 1);
  EXPECT_EQ(shape.at("heads"), 2);
  EXPECT_EQ(shape.at("kv_heads"), 2);
  EXPECT_EQ(shape.at("seq_q"), 64);
  EXPECT_EQ(shape.at("seq_k"), 64);
  EXPECT_EQ(shape.at("head_dim"), 32);
  EXPECT_EQ(shape.at("dtype"), "fp32");
  EXPECT_EQ(shape.at("causal"), true);
  EXPECT_EQ(shape.at("causal_assumed"), false);
  EXPECT_EQ(shape.at("calls"), 4);
  // The measured medians per variant at the one shape (ms in time_stats); cudnn refuses the CPU.
  std::map<std::string, double> median_us;
  for (const nlohmann::json& v : shape.at("variants")) {
    if (v.at("variant") == "cudnn") {
      EXPECT_FALSE(v.at("refusal").is_null()) << v.dump();
      continue;
    }
    EXPECT_TRUE(v.at("refusal").is_null()) << v.dump();
    // compare's defaults: 10 kept forwards, more until they fill 0.2 s, at most 1000
    EXPECT_GE(v.at("time_stats").at("count"), 10);
    EXPECT_LE(v.at("time_stats").at("count"), 1000);
    median_us[v.at("variant")] = v.at("time_stats").at("median_ms").get<double>() * 1e3;
  }
  ASSERT_EQ(median_us.size(), 2u);
  ASSERT_EQ(w.at("variants").size(), 3u);
  for (const nlohmann::json& p : w.at("variants")) {
    const std::string name = p.at("variant");
    if (name == "cudnn") {
      EXPECT_NE(p.at("not_projected").get<std::string>().find("refused 1x2x64x32 fp32 causal:"), std::string::npos)
          << p.dump();
      continue;
    }
    ASSERT_TRUE(p.at("not_projected").is_null()) << p.dump();
    ASSERT_EQ(p.at("steps").size(), 2u);
    double mean_projected = 0;
    for (std::size_t i = 0; i < 2; ++i) {
      const nlohmann::json& s = p.at("steps")[i];
      const double attention = 2 * median_us[name];  // two forwards per step at the one shape
      const double projected = kStepUs[i] - kReplacedUs[i] + attention;
      EXPECT_TRUE(near(s.at("step_us"), kStepUs[i])) << s.dump();
      EXPECT_TRUE(near(s.at("replaced_attention_us"), kReplacedUs[i])) << s.dump();
      EXPECT_TRUE(near(s.at("attention_us"), attention)) << s.dump();
      EXPECT_TRUE(near(s.at("projected_step_us"), projected)) << s.dump();
      mean_projected += projected / 2;
    }
    EXPECT_TRUE(near(p.at("step_us"), 2100)) << p.dump();
    EXPECT_TRUE(near(p.at("replaced_attention_us"), 630)) << p.dump();
    EXPECT_TRUE(near(p.at("projected_step_us"), mean_projected)) << p.dump();
    EXPECT_TRUE(near(p.at("change"), (mean_projected - 2100) / 2100)) << p.dump();
    EXPECT_LE(p.at("projected_step_min_us").get<double>(), p.at("projected_step_us").get<double>());
    EXPECT_GE(p.at("projected_step_max_us").get<double>(), p.at("projected_step_us").get<double>());
  }
  // A training trace: the backward part (450 µs per step) is said to be kept as measured.
  const auto assumptions = w.at("assumptions").dump();
  EXPECT_NE(assumptions.find("backward attention (450.0 \u00b5s per step) is kept as measured"), std::string::npos)
      << assumptions;
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST(WhatIfCli, TextLeadsEachVariantWithTheTracesForwardTimeAndTheStep) {
  ScopedEnv threads("OMP_NUM_THREADS", "1");
  const std::string path = write_trace(cpu_trace(kSteps));
  CliResult r = run_cli({"inspect", path, "--what-if", "--variants", "flash", "--no-insights"}, 600);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("what-if: attnprof's variants at the trace's 1 forward shape on this machine's CPU (mean of 2 "
                       "steps):\n  flash forward attention 630.0 \u00b5s/step \u2192 flash "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(": step 2.10 ms \u2192 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  at 1x2x64x32 fp32 causal (2 calls per step): flash "), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("what-if: running flash at 1x2x64x32 fp32 causal..."), std::string::npos) << r.err;
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST(WhatIfCli, AShapeThePreflightRefusesIsReportedAsRefused) {
  // 64x64x131072x128 fp32: q alone is 256 GiB, over the memory of any machine these tests run on.
  Step huge = kSteps[0];
  huge.dims = "[64, 64, 131072, 128]";
  const std::string path = write_trace(cpu_trace({huge}));
  CliResult r = run_cli({"inspect", path, "--what-if", "--variants", "flash", "--format", "json", "--no-insights"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json w = nlohmann::json::parse(r.out).at("what_if");
  ASSERT_TRUE(w.at("ran").get<bool>()) << w.dump();
  const nlohmann::json& run = w.at("shapes")[0].at("variants")[0];
  EXPECT_EQ(run.at("time_stats").at("count"), 0);
  EXPECT_NE(run.at("refusal").get<std::string>().find("GiB on cpu but only"), std::string::npos) << run.dump();
  const std::string why = w.at("variants")[0].at("not_projected");
  EXPECT_EQ(why.rfind("refused 64x64x131072x128 fp32 causal: ", 0), 0u) << why;
  CliResult text = run_cli({"inspect", path, "--what-if", "--variants", "flash", "--no-insights"});
  EXPECT_NE(text.out.find("  flash: not projected: refused 64x64x131072x128 fp32 causal: "), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("  at 64x64x131072x128 fp32 causal (2 calls per step): flash refused\n"), std::string::npos)
      << text.out;
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

// Whether this binary can use a GPU (`attnprof devices` says "cuda: available").
bool cuda_available() { return run_cli({"devices"}).out.find("\ncuda: available") != std::string::npos; }

TEST(WhatIfCli, AGpuTraceRunsOnlyOnItsGpuModelElseSaysWhyNot) {
  const std::string trace = std::string(ATTNPROF_SOURCE_DIR) + "/tests/data/model-traces/gpt_train_sdpa_cudnn.json.gz";
  const std::string wanted = "what-if needs the trace's GPU (NVIDIA H200) here; this machine has ";
  CliResult r = run_cli({"inspect", trace, "--what-if", "--variants", "flash", "--format", "json", "--no-insights"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json w = nlohmann::json::parse(r.out).at("what_if");
  CliResult text = run_cli({"inspect", trace, "--what-if", "--variants", "flash", "--no-insights"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  if (!cuda_available()) {
    ASSERT_FALSE(w.at("ran").get<bool>()) << w.dump();
    const std::string why = w.at("why_not");
    EXPECT_EQ(why.rfind(wanted + "none: ", 0), 0u) << why;
    EXPECT_EQ(why.find('\n'), std::string::npos);
    EXPECT_NE(text.out.find("\n" + why + "\n"), std::string::npos) << text.out;
    return;
  }
  if (!w.at("ran").get<bool>()) {  // another GPU model: named in the line
    const std::string why = w.at("why_not");
    EXPECT_EQ(why.rfind(wanted, 0), 0u) << why;
    EXPECT_EQ(why.find(wanted + "none"), std::string::npos) << why;
    return;
  }
  // The H200: the trace's steps (GPU time, from its attention JSON) projected with flash.
  const nlohmann::json steps = nlohmann::json::parse(r.out).at("attention").at("steps");
  EXPECT_EQ(w.at("where"), "this machine's NVIDIA H200");
  const nlohmann::json& p = w.at("variants")[0];
  ASSERT_TRUE(p.at("not_projected").is_null()) << p.dump();
  const double median_us = w.at("shapes")[0].at("variants")[0].at("time_stats").at("median_ms").get<double>() * 1e3;
  ASSERT_EQ(p.at("steps").size(), steps.size());
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const double step = steps[i].at("device_time_us"), fwd = steps[i].at("forward_device_time_us");
    const double calls = steps[i].at("forward_calls");
    EXPECT_NEAR(p.at("steps")[i].at("projected_step_us").get<double>(), step - fwd + calls * median_us, 0.002);
  }
}

TEST(WhatIfCli, BadFlagsGetOneLineAndExit2) {
  const std::string path = write_trace(cpu_trace({kSteps[0]}));
  struct Case {
    std::vector<std::string> args;
    std::string line;
  };
  const std::vector<Case> cases = {
      {{"--variants", "flash"}, "attnprof: --variants: needs --what-if"},
      {{"--what-if", "--variants", "flash,bogus"}, "attnprof: --variants: unknown variant 'bogus'"},
      {{"--what-if", "--variants", ""}, "attnprof: --variants: empty list"},
      {{"--what-if", "--what-if-shapes", "0"}, "attnprof: --what-if-shapes: must be 1..1000 (got 0)"},
      {{"--what-if-shapes", "4"}, "attnprof: --what-if-shapes: needs --what-if"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"inspect", path};
    args.insert(args.end(), c.args.begin(), c.args.end());
    CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << c.line;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_EQ(r.err.rfind(c.line, 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST(WhatIfCli, MoreShapesThanTheBoundRunNoneAndSaySo) {
  // Two steps at two shapes (seq 64 and 32), bounded to one.
  std::vector<Step> steps = kSteps;
  steps[1].dims = "[1, 2, 32, 32]";
  const std::string path = write_trace(cpu_trace(steps));
  CliResult r = run_cli({"inspect", path, "--what-if", "--what-if-shapes", "1", "--no-insights"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nwhat-if: the trace has 2 distinct forward attention shapes, over --what-if-shapes 1; raise "
                       "it to run them all\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.err.find("running"), std::string::npos) << r.err;
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

}  // namespace
