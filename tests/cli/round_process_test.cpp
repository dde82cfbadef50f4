// compare's later rounds in fresh processes (src/cli/round_process.*): the samples' JSON between
// the two processes, and through the binary that every later round's samples come from a process
// of its own and are counted in.
#include "cli/round_process.h"

#include <attnprof/error.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cli/cli_runner.h"

namespace {

using attnprof::Error;
using attnprof::RoundSamples;
using attnprof::cli::parse_round_samples;
using attnprof::cli::round_samples_json;
using attnprof::testing::CliResult;
using attnprof::testing::run_cli;

std::string with_pid(long long pid, const std::string& samples) {
  return "{\"pid\": " + std::to_string(pid) + ", \"samples\": " + samples + "}";
}

TEST(RoundProcess, SamplesSurviveTheJsonExactly) {
  const std::vector<std::string> names{"naive", "flash"};
  const std::vector<RoundSamples> sent{{{1.0 / 3.0, 12345.678901234567}, {2.5, 7.0}, false},
                                       {{0.1}, {1e-9}, false}};
  const std::string json = round_samples_json(names, sent);
  const std::vector<RoundSamples> got = parse_round_samples(json, names, 2);
  ASSERT_EQ(got.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(got[i].times, sent[i].times) << names[i];  // bit for bit: doubles round-trip through JSON
    EXPECT_EQ(got[i].cpu_times, sent[i].cpu_times) << names[i];
    EXPECT_FALSE(got[i].other_process) << "this process wrote them";
  }
  const std::string other = with_pid(static_cast<long long>(getpid()) + 1,
                                     R"([{"variant": "naive", "times_ns": [1], "cpu_times_ns": [2]}])");
  EXPECT_TRUE(parse_round_samples(other, {"naive"}, 3)[0].other_process);
}

TEST(RoundProcess, AnythingElseIsAnErrorNamingTheRound) {
  const std::vector<std::string> one{"naive"};
  auto message = [&](const std::string& json) {
    try {
      (void)parse_round_samples(json, one, 4);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string good_pid = std::to_string(getpid() + 1);
  EXPECT_EQ(message("not json"), "compare: round 4's process printed no samples of 1 variants");
  EXPECT_EQ(message(with_pid(1, "[]")), "compare: round 4's process printed no samples of 1 variants");
  EXPECT_EQ(message(with_pid(1, R"([{"variant": "flash", "times_ns": [1], "cpu_times_ns": [1]}])")),
            "compare: round 4's process: sample 0 is not naive's");
  EXPECT_EQ(message(with_pid(1, R"([{"variant": "naive", "times_ns": [], "cpu_times_ns": [1]}])")),
            "compare: round 4's process: no times_ns for naive");
  EXPECT_EQ(message(with_pid(1, R"([{"variant": "naive", "times_ns": [1], "cpu_times_ns": [-1]}])")),
            "compare: round 4's process: a bad cpu_times_ns for naive");
  EXPECT_EQ(message(with_pid(1, R"([{"variant": "naive", "times_ns": ["1"], "cpu_times_ns": [1]}])")),
            "compare: round 4's process: a bad times_ns for naive");
}

// 3 rounds of --active 2: ceil(2 / 3) = 1 kept step a round, 3 samples a variant, from 3 processes
// (the first round's and two fresh ones); a plain run measures in its one process. The header says
// so, the progress too.
TEST(RoundProcess, CompareCountsTheProcessesItsRoundsRanIn) {
  CliResult r = run_cli({"compare", "--device", "cpu", "--variants", "naive,flash", "--batch", "1", "--heads", "2",
                         "--seq", "32", "--head-dim", "16", "--active", "2", "--rounds", "3", "--min-time", "0",
                         "--format", "json", "--out", "{work}/t"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json compared = nlohmann::json::parse(r.out);
  ASSERT_EQ(compared["rows"].size(), 2u) << r.out;
  for (const auto& row : compared["rows"]) {
    EXPECT_EQ(row["time_stats"]["count"], 3) << row["variant"];
    EXPECT_EQ(row["time_stats"]["processes"], 3) << row["variant"];
    EXPECT_EQ(row["cpu_time_stats"]["processes"], 3) << row["variant"];
  }
  CliResult text = run_cli({"compare", "--device", "cpu", "--variants", "flash", "--batch", "1", "--heads", "2",
                            "--seq", "32", "--head-dim", "16", "--active", "2", "--rounds", "2", "--min-time", "0",
                            "--no-profile"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("2 processes"), std::string::npos) << text.out;  // the header's end
  EXPECT_NE(text.err.find("round 2 of 2 (a fresh process)..."), std::string::npos) << text.err;
  CliResult run = run_cli({"run", "--device", "cpu", "--variant", "flash", "--batch", "1", "--heads", "2", "--seq",
                           "32", "--head-dim", "16", "--min-time", "0", "--no-profile", "--format", "json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(nlohmann::json::parse(run.out)["time_stats"]["processes"], 1);
  for (const CliResult* c : {&r, &text, &run}) std::filesystem::remove_all(c->work_dir);
}

// Without --rounds, compare on the CPU measures in 15 rounds, so 15 processes (--active 2: one
// kept step a round, 15 samples); the results file name carries no r<N> for that default.
TEST(RoundProcess, CompareOnTheCpuDefaultsToFifteenProcesses) {
  CliResult r = run_cli({"compare", "--device", "cpu", "--variants", "flash", "--batch", "1", "--heads", "2", "--seq",
                         "32", "--head-dim", "16", "--active", "2", "--min-time", "0", "--format", "json", "--out",
                         "{work}/t"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json compared = nlohmann::json::parse(r.out);
  ASSERT_EQ(compared["rows"].size(), 1u) << r.out;
  EXPECT_EQ(compared["rows"][0]["time_stats"]["count"], 15);
  EXPECT_EQ(compared["rows"][0]["time_stats"]["processes"], 15);
  EXPECT_TRUE(std::filesystem::exists(r.work_dir + "/t/compare_1_2_32_16_cpu_sched1-1-2_mt0_vflash.json")) << r.err;
  std::filesystem::remove_all(r.work_dir);
}

// The process measuring a round prints its samples' JSON and nothing else on stdout, one sample
// per listed variant; it checks its list as --variants is checked.
TEST(RoundProcess, ARoundsProcessPrintsItsSamples) {
  CliResult r = run_cli({"compare", "--device", "cpu", "--batch", "1", "--heads", "2", "--seq", "32", "--head-dim",
                         "16", "--active", "3", "--rounds", "3", "--min-time", "0", "--measure-round", "2",
                         "--round-variants", "math,flash"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["samples"].size(), 2u) << r.out;
  EXPECT_EQ(j["samples"][0]["variant"], "math");
  EXPECT_EQ(j["samples"][1]["variant"], "flash");
  EXPECT_EQ(j["samples"][1]["times_ns"].size(), 1u) << "ceil(3 / 3) kept forwards a round";
  EXPECT_TRUE(r.files.empty()) << "a round's process writes no files";
  CliResult bad = run_cli({"compare", "--device", "cpu", "--measure-round", "2", "--round-variants", "flsh"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--variants: unknown variant 'flsh'"), std::string::npos) << bad.err;
  std::filesystem::remove_all(r.work_dir);
  std::filesystem::remove_all(bad.work_dir);
}

}  // namespace
