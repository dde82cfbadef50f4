// --pass through the binary: its parsing on run, compare and sweep; the one-line refusal of a
// variant with no backward; the gradients --dump writes (checked against numpy's fp64 gradients);
// the JSON's pass and gradient errors, and what they were checked on (all rows, or a sample above
// the full reference's bound); the pass in the file names and the table's header.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/cli_runner.h"

using attnprof::testing::CliResult;
using attnprof::testing::results_path;
using attnprof::testing::run_cli;
using attnprof::testing::shell_quote;

namespace {

std::string python_with_numpy() {
  return std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
}

std::vector<std::string> tiny(std::vector<std::string> args) {
  for (const char* flag : {"--device", "cpu", "--batch", "1", "--heads", "2", "--seq", "16", "--head-dim", "16",
                           "--active", "2"}) {
    args.emplace_back(flag);
  }
  return args;
}

void expect_one_line_refusal(const CliResult& r, const std::vector<std::string>& words) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  for (const std::string& w : words) EXPECT_NE(r.err.find(w), std::string::npos) << "no '" << w << "' in: " << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_TRUE(r.files.empty()) << "left " << r.files.size() << " files, first " << r.files[0];
}

TEST(PassCli, UnknownPassIsRefusedOnRunCompareAndSweep) {
  for (const char* command : {"run", "compare"}) {
    CliResult r = run_cli(tiny({command, "--pass", "backwards", "--out", "{work}/t"}));
    expect_one_line_refusal(r, {"--pass", "'backwards'", "forward, backward, train"});
  }
  CliResult s = run_cli({"sweep", "--device", "cpu", "--seq", "16", "--head-dim", "16", "--pass", "fwd", "--out",
                         "{work}/s"});
  expect_one_line_refusal(s, {"--pass", "'fwd'", "forward, backward, train"});
}

// A backward or train run of a variant that refuses the spec fails as its forward run does: one
// line naming the flag, exit 2, no files (the refusal of a variant without a backward is
// tests/run/run_pass_test.cpp's and, through the binary with a plug-in, tests/install's).
TEST(PassCli, RefusedSpecIsOneLineForEveryPass) {
  for (const char* pass : {"backward", "train"}) {
    CliResult r = run_cli({"run", "--device", "cpu", "--batch", "1", "--heads", "2", "--seq", "16", "--variant",
                           "flash", "--pass", pass, "--head-dim", "600", "--dump", "{work}/d", "--out", "{work}/t"});
    expect_one_line_refusal(r, {"--head-dim 600"});
  }
}

// --expect checks a forward's work: with a backward pass it is refused, not checked against the
// forward that ran outside the measured range.
TEST(PassCli, ExpectNeedsTheForwardPass) {
  CliResult r = run_cli(tiny({"run", "--variant", "naive", "--pass", "backward", "--expect", "gemm,gemm", "--out",
                              "{work}/t"}));
  expect_one_line_refusal(r, {"--expect", "--pass forward only", "--pass backward"});
}

TEST(PassCli, BackwardDumpMatchesNumpyGradients) {
  for (const char* dtype : {"fp32", "bf16"}) {
    for (const char* layout : {"bhsd", "bshd"}) {
      CliResult r = run_cli({"run", "--device", "cpu", "--variant", "math", "--pass", "backward", "--batch", "2",
                             "--heads", "4", "--kv-heads", "2", "--seq", "33", "--seq-k", "45", "--head-dim", "16",
                             "--dtype", dtype, "--layout", layout, "--active", "1", "--dump", "{work}/dump", "--out",
                             "{work}/traces"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      for (const char* name : {"q", "k", "v", "out", "do", "dq", "dk", "dv"}) {
        EXPECT_TRUE(std::filesystem::exists(r.work_dir + "/dump/" + name + ".npy")) << name;
      }
      const std::string check = python_with_numpy() + " " +
                                shell_quote(std::string(ATTNPROF_SOURCE_DIR) + "/tests/cli/check_grad_dump.py") + " " +
                                shell_quote(r.work_dir + "/dump") + " 1 " +
                                (std::string(dtype) == "fp32" ? "1e-5" : "1e-2");
      EXPECT_EQ(std::system(check.c_str()), 0) << dtype << " " << layout;
      std::filesystem::remove_all(r.work_dir);
    }
  }
}

// A forward dump writes no gradient files.
TEST(PassCli, ForwardDumpHasNoGradients) {
  CliResult r = run_cli(tiny({"run", "--variant", "naive", "--dump", "{work}/dump", "--out", "{work}/t"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(r.work_dir + "/dump/out.npy"));
  EXPECT_FALSE(std::filesystem::exists(r.work_dir + "/dump/dq.npy"));
  EXPECT_FALSE(std::filesystem::exists(r.work_dir + "/dump/do.npy"));
}

TEST(PassCli, JsonHasThePassAndGradientErrors) {
  CliResult fwd = run_cli(tiny({"run", "--variant", "naive", "--format", "json", "--out", "{work}/t"}));
  ASSERT_EQ(fwd.exit_code, 0) << fwd.err;
  const nlohmann::json f = nlohmann::json::parse(fwd.out);
  EXPECT_EQ(f.at("pass"), "forward");
  EXPECT_FALSE(f.contains("grad_rel_err")) << "a forward has no gradients";
  for (const char* pass : {"backward", "train"}) {
    CliResult r = run_cli(tiny({"run", "--variant", "fused", "--dtype", "fp32", "--pass", pass, "--format", "json",
                                "--out", "{work}/t"}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j.at("pass"), pass);
    const double dq = j.at("grad_rel_err_dq").get<double>(), dk = j.at("grad_rel_err_dk").get<double>(),
                 dv = j.at("grad_rel_err_dv").get<double>();
    EXPECT_EQ(j.at("grad_rel_err").get<double>(), std::max({dq, dk, dv}));
    EXPECT_LE(j.at("grad_rel_err").get<double>(), 1e-5);
    EXPECT_GT(dq, 0.0) << "an fp32 backward is not bit-exact against fp64";
    EXPECT_EQ(j.at("grad_rel_err_scope"), "all rows") << "a small problem is checked in full";
    // fused's backward is 5 pieces of work (2 GEMMs, one softmax backward, 2 GEMMs), its forward 3.
    EXPECT_EQ(j.at("kernels_per_forward").get<double>(), std::string(pass) == "backward" ? 5.0 : 8.0) << pass;
    const std::string trace = j.at("trace").get<std::string>();
    EXPECT_NE(trace.find(std::string("_cpu_") + pass + "_fp32"), std::string::npos) << trace;
  }
}

// Above the full reference's bound (5·16·8192·8193/2 = 2.7e9 MACs > 2^31) the gradients are
// checked on a sample, which the text and the JSON name; flash's CPU backward of this shape takes
// tens of milliseconds and the sampled check about a second.
TEST(PassCli, LargeBackwardIsCheckedOnANamedSample) {
  const std::vector<std::string> large{"run", "--device", "cpu", "--variant", "flash", "--pass", "backward",
                                       "--batch", "1", "--heads", "1", "--seq", "8192", "--head-dim", "16",
                                       "--dtype", "fp32", "--no-profile", "--repeat", "1", "--min-time", "0"};
  const std::string scope =
      "dq on 4096 sampled rows of 8192, dk/dv on 1024 sampled keys of 8192 in 1 of 1 kv-head groups";
  CliResult text = run_cli(large);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  const std::size_t line = text.out.find("gradient error vs fp64");
  ASSERT_NE(line, std::string::npos) << text.out;
  const std::string grad_line = text.out.substr(line, text.out.find('\n', line) - line);
  EXPECT_NE(grad_line.find("; " + scope + ")"), std::string::npos) << grad_line;
  EXPECT_EQ(grad_line.find("all rows"), std::string::npos) << grad_line;

  std::vector<std::string> as_json = large;
  as_json.insert(as_json.end(), {"--format", "json"});
  CliResult json = run_cli(as_json);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j.at("grad_rel_err_scope"), scope);
  EXPECT_LE(j.at("grad_rel_err").get<double>(), 1e-5);
  EXPECT_GT(j.at("grad_rel_err_dk").get<double>(), 0.0) << "an fp32 backward is not bit-exact against fp64";
}

TEST(PassCli, CompareTableHeaderShowsThePass) {
  CliResult r = run_cli(tiny({"compare", "--variants", "naive,fused,flash,cudnn", "--pass", "backward", "--rounds",
                              "1", "--out", "{work}/c"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string header = r.out.substr(0, r.out.find("variant"));
  EXPECT_NE(header.find("pass backward"), std::string::npos) << r.out;
  EXPECT_NE(header.find("backwards"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("grad err"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cudnn refused"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("flash refused"), std::string::npos) << r.out;
  const std::string results = results_path(r.work_dir + "/c", "compare", "json");
  EXPECT_NE(results.find("_backward"), std::string::npos) << results;
  CliResult fwd = run_cli(tiny({"compare", "--variants", "naive", "--rounds", "1", "--out", "{work}/c"}));
  ASSERT_EQ(fwd.exit_code, 0) << fwd.err;
  EXPECT_EQ(fwd.out.find("pass "), std::string::npos) << "a forward table keeps its header: " << fwd.out;
  EXPECT_EQ(fwd.out.find("grad err"), std::string::npos) << fwd.out;
}

TEST(PassCli, SweepRunsTheBackwardOfVariantsThatHaveOne) {
  CliResult r = run_cli({"sweep", "--device", "cpu", "--batch", "1", "--heads", "2", "--seq", "16,32", "--head-dim",
                         "16", "--forwards", "1", "--pass", "train", "--out", "{work}/s"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string json_path = results_path(r.work_dir + "/s", "sweep", "json");
  ASSERT_NE(json_path, "") << r.out;
  EXPECT_NE(json_path.find("_train"), std::string::npos) << json_path;
  const nlohmann::json j = nlohmann::json::parse(attnprof::testing::read_whole_file(json_path));
  std::vector<std::string> ran;
  for (const auto& row : j.at("rows")) {
    if (row.at("status") == "ok") ran.push_back(row.at("variant").get<std::string>());
  }
  // naive, inplace, math, fused, efficient, flash at each of the two lengths; not cudnn (no CPU forward).
  EXPECT_EQ(ran.size(), 12u) << j.dump();
  EXPECT_EQ(std::count(ran.begin(), ran.end(), "flash"), 2);
}

}  // namespace

// The schedule and timing flags count passes, not forwards: their help is true of --pass backward
// and train too (run and compare share them).
TEST(PassCli, TimingFlagsHelpSpeaksOfPasses) {
  for (const char* command : {"run", "compare"}) {
    CliResult r = run_cli({command, "--help"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::string folded;  // CLI11 wraps long descriptions: compare with the whitespace folded
    for (char c : r.out) {
      if (c == '\n' || c == ' ') {
        if (!folded.empty() && folded.back() != ' ') folded += ' ';
      } else {
        folded += c;
      }
    }
    for (const char* said : {"time plain passes (forwards, or the --pass backward or train steps) without recording",
                             "steps kept, one pass each (a forward, or with --pass a backward or training step)",
                             "passes (forwards, or the --pass backward or train steps) timed after one warm-up",
                             "seconds the kept passes (--active or --repeat) fill at least: a fast pass is kept more"}) {
      EXPECT_NE(folded.find(said), std::string::npos) << command << ": no '" << said << "' in:\n" << r.out;
    }
    for (const char* old : {"one forward each", "time plain forwards", "forwards timed after", "kept forwards"})
      EXPECT_EQ(r.out.find(old), std::string::npos) << command << " still says '" << old << "'";
  }
}
