// The terminal-facing CLI through the binary: the table's width, --version, help, "did you
// mean", the JSON time statistics and the ranking words.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_runner.h"

using attnprof::testing::CliResult;
using attnprof::testing::results_path;
using attnprof::testing::run_cli;

namespace {

// Code points, as a terminal counts the columns of our (non-wide) characters.
std::size_t columns_of(const std::string& line) {
  std::size_t n = 0;
  for (unsigned char c : line) n += (c & 0xC0) != 0x80;
  return n;
}

std::size_t widest_line(const std::string& text) {
  std::size_t widest = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) widest = std::max(widest, columns_of(line));
  return widest;
}

std::vector<std::string> compare_args(std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"compare", "--device", "cpu", "--batch", "1",   "--heads", "2",
                                "--seq",   "64",       "--dtype", "fp32", "--out", "{work}/traces"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// Sets or unsets COLUMNS for the commands run while it lives (run_cli's shell inherits it).
class ColumnsEnv {
 public:
  explicit ColumnsEnv(const char* value) {
    if (const char* old = std::getenv("COLUMNS")) saved_ = old;
    value ? setenv("COLUMNS", value, 1) : unsetenv("COLUMNS");
  }
  ~ColumnsEnv() { saved_.empty() ? unsetenv("COLUMNS") : setenv("COLUMNS", saved_.c_str(), 1); }

 private:
  std::string saved_;
};

TEST(CompareTable, FitsCOLUMNS80) {
  ColumnsEnv columns("80");
  CliResult r = run_cli(compare_args({"--rounds", "2", "--min-time", "0"}));  // the layout, not the timing
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LE(widest_line(r.out), 80u) << r.out;
  // a header line naming the shape, dtype, layout, device and threads
  const std::string header = r.out.substr(0, r.out.find("\nvariant "));  // it may wrap
  for (const char* word : {"1\u00d72\u00d764\u00d764", "fp32", "bhsd", "device: cpu, ", "thread", "median"}) {
    EXPECT_NE(header.find(word), std::string::npos) << word << "\n" << r.out;
  }
  // one line per variant: each variant's name starts exactly one line
  for (const char* name : {"naive", "inplace", "math", "fused", "efficient", "flash", "cudnn"}) {
    int starts = 0;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) starts += line.rfind(std::string(name) + " ", 0) == 0;
    EXPECT_EQ(starts, 1) << name << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("min\u2013max ms"), std::string::npos) << r.out;
  std::filesystem::remove_all(r.work_dir);
}

TEST(CompareTable, IsLaidOutFor100ColumnsWhenNotATerminal) {
  ColumnsEnv columns(nullptr);  // stdout is a file here
  CliResult r = run_cli(compare_args({"--variants", "naive,flash"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LE(widest_line(r.out), 100u) << r.out;
  EXPECT_GT(widest_line(r.out), 80u) << r.out;  // the insights use the width, not a 40-column cell
  std::filesystem::remove_all(r.work_dir);
}

TEST(Version, PrintsTheProjectVersion) {
  CliResult r = run_cli({"--version"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "attnprof " ATTNPROF_TEST_VERSION "\n");
}

TEST(Help, BareAndHelpCommandPrintTheHelp) {
  CliResult bare = run_cli({});
  CliResult help = run_cli({"help"});
  EXPECT_EQ(bare.exit_code, 0) << bare.err;
  EXPECT_EQ(help.exit_code, 0) << help.err;
  EXPECT_EQ(bare.out, help.out);
  for (const char* command : {"run", "compare", "sweep", "inspect", "report", "devices"}) {
    EXPECT_NE(bare.out.find(command), std::string::npos) << command;
  }
  CliResult compare_help = run_cli({"help", "compare"});
  EXPECT_EQ(compare_help.exit_code, 0);
  EXPECT_NE(compare_help.out.find("--variants"), std::string::npos) << compare_help.out;
}

TEST(Help, HasNoParserNotation) {
  for (const char* command : {"run", "compare", "sweep", "inspect", "report", "devices"}) {
    CliResult r = run_cli({command, "--help"});
    EXPECT_EQ(r.exit_code, 0) << command;
    for (const char* artefact : {"INT:", ":INT", "Excludes:", "Needs:", "TEXT:", "=8", "=text", "REQUIRED"}) {
      EXPECT_EQ(r.out.find(artefact), std::string::npos) << command << " shows " << artefact << "\n" << r.out;
    }
  }
  CliResult run = run_cli({"run", "--help"});
  EXPECT_NE(run.out.find("--heads N"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("(default: 10)"), std::string::npos) << run.out;  // --active's default, in words
  EXPECT_NE(run.out.find("(not with --out)"), std::string::npos) << run.out;
}

TEST(DidYouMean, AMisspeltCommand) {
  CliResult r = run_cli({"comapre"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "attnprof: unknown command 'comapre' (did you mean 'compare'?); allowed: run, compare, devices, "
                   "inspect, sweep, report, help\n");
  CliResult far = run_cli({"zzzzzz"});
  EXPECT_EQ(far.exit_code, 2);
  EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << far.err;
}

TEST(DidYouMean, AMisspeltVariant) {
  CliResult run = run_cli({"run", "--device", "cpu", "--variant", "flsh", "--out", "{work}/traces"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("--variant: unknown variant 'flsh' (did you mean 'flash'?); allowed: "), std::string::npos)
      << run.err;
  EXPECT_TRUE(run.out.empty());
  CliResult compare = run_cli(compare_args({"--variants", "naive,inplac"}));
  EXPECT_EQ(compare.exit_code, 2);
  EXPECT_NE(compare.err.find("'inplac' (did you mean 'inplace'?)"), std::string::npos) << compare.err;
}

void expect_consistent_stats(const nlohmann::json& stats, const std::string& what) {
  ASSERT_TRUE(stats.is_object()) << what;
  for (const char* key : {"count", "median_ms", "min_ms", "max_ms", "p10_ms", "p90_ms"}) {
    ASSERT_TRUE(stats.contains(key) && stats[key].is_number()) << what << " " << key;
  }
  EXPECT_TRUE(stats["count"].is_number_integer()) << what;
  EXPECT_GE(stats["count"].get<int>(), 10) << what;
  const double min = stats["min_ms"], p10 = stats["p10_ms"], median = stats["median_ms"], p90 = stats["p90_ms"],
               max = stats["max_ms"];
  EXPECT_GT(min, 0) << what;
  EXPECT_LE(min, p10) << what;
  EXPECT_LE(p10, median) << what;
  EXPECT_LE(median, p90) << what;
  EXPECT_LE(p90, max) << what;
}

TEST(TimeStatsJson, RunCarriesTenOrMoreSamplesInOrder) {
  CliResult r = run_cli({"run", "--device", "cpu", "--variant", "flash", "--batch", "1", "--heads", "2", "--seq",
                         "64", "--format", "json", "--out", "{work}/traces"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  expect_consistent_stats(j["time_stats"], "run time_stats");
  expect_consistent_stats(j["cpu_time_stats"], "run cpu_time_stats");
  EXPECT_DOUBLE_EQ(j["time_stats"]["median_ms"].get<double>(), j["median_ms"].get<double>());
  CliResult counted = run_cli({"run", "--device", "cpu", "--variant", "flash", "--batch", "1", "--heads", "2",
                               "--seq", "64", "--format", "json", "--no-profile", "--repeat", "13", "--min-time", "0"});
  ASSERT_EQ(counted.exit_code, 0) << counted.err;
  EXPECT_EQ(nlohmann::json::parse(counted.out)["time_stats"]["count"], 13);
}

// compare measures the kept forwards in rounds: --active 4 over 3 rounds is ceil(4/3) = 2 per
// round, 6 samples in all; its trace holds the first round's 2 kept steps. --no-profile's
// --repeat is spread the same way (5 over 2 rounds: 3 each, 6).
TEST(TimeStatsJson, CompareMeasuresItsForwardsInRounds) {
  CliResult r = run_cli({"compare", "--device", "cpu", "--variants", "flash,naive", "--batch", "1", "--heads", "2",
                         "--seq", "64", "--active", "4", "--rounds", "3", "--min-time", "0", "--format", "json",
                         "--out", "{work}/t"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  for (const auto& row : j["rows"]) {
    const nlohmann::json& stats = row["time_stats"];
    EXPECT_EQ(stats["count"], 6) << row["variant"];
    EXPECT_LE(stats["min_ms"].get<double>(), stats["median_ms"].get<double>()) << row["variant"];
    EXPECT_LE(stats["median_ms"].get<double>(), stats["max_ms"].get<double>()) << row["variant"];
    CliResult inspect = run_cli({"inspect", row["trace_path"].get<std::string>(), "--format", "json"});
    ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
    EXPECT_EQ(nlohmann::json::parse(inspect.out)["steps"].size(), 2u) << row["variant"];
    std::filesystem::remove_all(inspect.work_dir);
  }
  CliResult timed = run_cli({"compare", "--device", "cpu", "--variants", "flash", "--batch", "1", "--heads", "2",
                             "--seq", "64", "--no-profile", "--repeat", "5", "--rounds", "2", "--min-time", "0",
                             "--format", "json"});
  ASSERT_EQ(timed.exit_code, 0) << timed.err;
  EXPECT_EQ(nlohmann::json::parse(timed.out)["rows"][0]["time_stats"]["count"], 6);
  std::filesystem::remove_all(r.work_dir);
  std::filesystem::remove_all(timed.work_dir);
}

// --min-time: a forward of a few microseconds is kept more than the 10 times of the default count
// (here 0.05 s: far more than 10 forwards, at most 1000), in run, compare and sweep alike; the
// file names say the time when it is not the default 0.2 s. One thread: two OpenMP threads on a
// loaded 2-core machine can make a tiny forward take milliseconds at a barrier.
TEST(TimeStatsJson, MinTimeKeepsAFastForwardMoreTimes) {
  CliResult run = run_cli({"run", "--device", "cpu", "--variant", "flash", "--batch", "1", "--heads", "1", "--seq",
                           "16", "--head-dim", "8", "--dtype", "fp32", "--threads", "1", "--min-time", "0.05",
                           "--format", "json", "--out", "{work}/t"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json j = nlohmann::json::parse(run.out);
  const int count = j["time_stats"]["count"];
  EXPECT_GT(count, 10) << run.out;
  EXPECT_LE(count, 1000) << run.out;
  // How many the time asked takes depends on the machine's load while the passes that size the
  // count run: tests/run/run_test.cpp checks the sizing (kept_forwards, sizing_pass_ns) on given times.
  EXPECT_NE(j["trace"].get<std::string>().find("_mt0.05"), std::string::npos) << j["trace"];
  CliResult inspect = run_cli({"inspect", j["trace"].get<std::string>(), "--format", "json"});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_EQ(nlohmann::json::parse(inspect.out)["steps"].size(), static_cast<std::size_t>(count));
  CliResult sweep = run_cli({"sweep", "--device", "cpu", "--seq", "16", "--head-dim", "8", "--variants", "flash",
                             "--heads", "1", "--dtype", "fp32", "--threads", "1", "--no-profile", "--min-time",
                             "0.05", "--out", "{work}/s"});
  ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
  std::ifstream in(results_path(sweep.work_dir + "/s", "sweep", "json"));
  EXPECT_GT(nlohmann::json::parse(in)["rows"][0]["time_stats"]["count"].get<int>(), 10);
  for (const char* bad : {"-1", "61", "nan"}) {
    CliResult refused = run_cli({"compare", "--device", "cpu", "--min-time", bad, "--out", "{work}/c"});
    EXPECT_EQ(refused.exit_code, 2) << bad;
    EXPECT_NE(refused.err.find("--min-time: must be 0..60 seconds"), std::string::npos) << refused.err;
    EXPECT_TRUE(refused.out.empty()) << refused.out;
    std::filesystem::remove_all(refused.work_dir);
  }
  std::filesystem::remove_all(run.work_dir);
  std::filesystem::remove_all(inspect.work_dir);
  std::filesystem::remove_all(sweep.work_dir);
}

TEST(TimeStatsJson, SweepMeasuresTheForwardsItIsTold) {
  CliResult r = run_cli({"sweep", "--device", "cpu", "--seq", "64", "--variants", "flash", "--heads", "2",
                         "--forwards", "12", "--min-time", "0", "--no-profile", "--out", "{work}/s"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(results_path(r.work_dir + "/s", "sweep", "json"));
  const nlohmann::json j = nlohmann::json::parse(in);
  ASSERT_EQ(j["rows"].size(), 1u);
  expect_consistent_stats(j["rows"][0]["time_stats"], "sweep time_stats");
  EXPECT_EQ(j["rows"][0]["time_stats"]["count"], 12);
  EXPECT_EQ(j["rows"][0]["samples"], 12);
  std::filesystem::remove_all(r.work_dir);
}

// The ranking sentence follows the spreads: a variant is called the fastest, clear of the next,
// only when no other variant's min–max spread overlaps its own; otherwise "within noise of".
TEST(Ranking, CompareWordsFollowTheSpreads) {
  // The words against the spreads as measured, whatever they are: two rounds, no --min-time.
  CliResult r = run_cli(
      compare_args({"--variants", "naive,inplace,flash", "--rounds", "2", "--min-time", "0", "--format", "json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  struct Timed {
    std::string name;
    double min, median, max;
  };
  std::vector<Timed> rows;
  for (const auto& row : j["rows"]) {
    expect_consistent_stats(row["time_stats"], row["variant"].get<std::string>());
    const auto& s = row["time_stats"];
    rows.push_back({row["variant"], s["min_ms"], s["median_ms"], s["max_ms"]});
  }
  ASSERT_EQ(rows.size(), 3u);
  std::sort(rows.begin(), rows.end(), [](const Timed& a, const Timed& b) { return a.median < b.median; });
  std::vector<std::string> tied{rows[0].name};
  for (std::size_t i = 1; i < rows.size(); ++i) {
    if (rows[i].min <= rows[0].max && rows[0].min <= rows[i].max) tied.push_back(rows[i].name);
  }
  EXPECT_EQ(j["ranking"]["fastest"].get<std::vector<std::string>>(), tied) << r.out;
  const std::string sentence = j["ranking"]["sentence"];
  if (tied.size() == 1) {
    EXPECT_EQ(sentence.rfind("fastest: " + rows[0].name + " ", 0), 0u) << sentence;
    EXPECT_EQ(sentence.find("within noise"), std::string::npos) << sentence;
  } else {
    EXPECT_EQ(sentence.rfind("no single fastest: " + rows[0].name + " ", 0), 0u) << sentence;
    EXPECT_NE(sentence.find("within noise of"), std::string::npos) << sentence;
  }
}

}  // namespace
