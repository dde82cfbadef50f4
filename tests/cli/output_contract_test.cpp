// The output contract through the binary (issue 17, items 4-7, 11, 14, 15): a refused command
// (bad --out, a memory limit, a grid too large) says so in one line on stderr, exits 2 and leaves
// nothing behind, not even an empty directory; a write error mid-sweep leaves sweep.csv and
// sweep.json as they were.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/cli_runner.h"

using attnprof::testing::CliResult;
using attnprof::testing::make_temp_dir;
using attnprof::testing::results_path;
using attnprof::testing::run_cli;
using attnprof::testing::read_whole_file;

namespace {

namespace fs = std::filesystem;

// Every entry, directories included, under `dir` (relative names).
std::vector<std::string> entries_under(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) names.push_back(fs::relative(entry.path(), dir).string());
  return names;
}

void expect_refused(const CliResult& r, const std::string& expected) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "stderr: " << r.err;
  EXPECT_NE(r.err.find(expected), std::string::npos) << "stderr: " << r.err;
  EXPECT_TRUE(r.out.empty()) << "stdout: " << r.out;
  const std::vector<std::string> left = entries_under(r.work_dir);
  EXPECT_TRUE(left.empty()) << "left " << left.size() << " entries, first " << (left.empty() ? "" : left[0]);
}

struct Refusal {
  std::string label;
  std::vector<std::string> args;
  std::string expected;
};
std::ostream& operator<<(std::ostream& os, const Refusal& c) { return os << c.label; }

std::vector<std::string> tiny(std::vector<std::string> args) {
  for (const char* flag : {"--device", "cpu", "--batch", "1", "--heads", "2", "--seq", "16"}) args.emplace_back(flag);
  return args;
}

std::vector<Refusal> refusals() {
  // The S² estimates wrapped int64 below zero and passed the preflight: math's 9·S² + 6·S² bytes
  // at S = 8e8 (bf16), naive's and inplace's 2·4·S² + S² at S = 1.05e9 (fp32).
  auto huge = [&](const char* variant, const char* seq, const char* dtype) {
    return std::vector<std::string>{"run",   "--variant",  variant, "--device", "cpu",   "--batch", "1",
                                    "--heads", "1",        "--seq", seq,        "--head-dim", "1", "--dtype",
                                    dtype,   "--out",      "{work}/traces"};
  };
  return {
      // Issue 17, item 4: every S² estimate saturates instead of wrapping past the preflight
      {"math_seq_800M", huge("math", "800000000", "bf16"), "largest --seq"},
      {"naive_fp32_seq_1050M", huge("naive", "1050000000", "fp32"), "largest --seq"},
      {"inplace_fp32_seq_1050M", huge("inplace", "1050000000", "fp32"), "largest --seq"},
      {"fused_fp32_seq_1050M", huge("fused", "1050000000", "fp32"), "largest --seq"},
      // Issue 17, item 5: no endless doubling past INT64_MAX, no 1e11-point grid
      {"sweep_doubling_past_int64",
       {"sweep", "--device", "cpu", "--seq", "2,4,...,9223372036854775807", "--out", "{work}/s"},
       "does not continue 2,4"},
      {"sweep_1e11_points", {"sweep", "--device", "cpu", "--seq", "2,3,...,100000000000", "--out", "{work}/s"},
       "more than 10000 values"},
      {"sweep_grid_over_cap",
       {"sweep", "--device", "cpu", "--seq", "1,2,3,...,4000", "--head-dim", "1,2,3", "--variants", "naive", "--out",
        "{work}/s"},
       "12000 points"},
      // Issue 17, item 6: an empty path is refused by every command
      {"run_out_empty", tiny({"run", "--out", ""}), "--out"},
      {"compare_out_empty", tiny({"compare", "--out", ""}), "--out"},
      {"sweep_out_empty", {"sweep", "--device", "cpu", "--out", ""}, "--out"},
      {"report_out_empty", {"report", "{work}", "--out", ""}, "--out"},
      {"report_dir_empty", {"report", ""}, "empty path"},
      {"run_dump_empty", tiny({"run", "--dump", "", "--out", "{work}/traces"}), "--dump"},
      // Issue 17, item 14: --plugin '' is an empty path, not "does not export"
      {"plugin_empty", tiny({"run", "--plugin", "", "--out", "{work}/traces"}), "empty path"},
      // Issue 17, item 7: an --out problem is one line before any variant runs
      {"compare_out_is_a_file", tiny({"compare", "--out", "/etc/hostname"}), "not a directory"},
      {"compare_all_refused_by_preflight",
       {"compare", "--device", "cpu", "--batch", "4096", "--heads", "64", "--seq", "65536", "--out", "{work}/traces"},
       "every variant refused"},
      // Issue 17, item 14: one parser for variant lists
      {"compare_variants_trailing_comma", tiny({"compare", "--variants", "flash,", "--out", "{work}/t"}), "empty name"},
      {"compare_variants_empty", tiny({"compare", "--variants", "", "--out", "{work}/t"}), "empty list"},
      {"sweep_variants_empty", {"sweep", "--device", "cpu", "--variants", "", "--out", "{work}/s"}, "empty list"},
      {"sweep_variants_trailing_comma", {"sweep", "--device", "cpu", "--variants", "naive,", "--out", "{work}/s"},
       "empty name"},
      // Issue 17, item 14: the ceilings line is not printed before an --out error; --dump's failure leaves
      // no --out directory
      {"sweep_out_under_a_file", {"sweep", "--device", "cpu", "--seq", "16", "--out", "/etc/hostname/s"}, "--out"},
      {"run_dump_under_a_file", tiny({"run", "--dump", "/etc/hostname/d", "--out", "{work}/traces"}), "--dump"},
  };
}

class RefusalTest : public ::testing::TestWithParam<Refusal> {};

// CPU seconds (user + system) of this process's children that have exited and been waited for,
// their own children included: run_cli's shell, `timeout` and the binary.
double children_cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_CHILDREN, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// Quick is measured in CPU seconds, which a busy machine does not stretch as it stretches the wall
// clock (a refusal takes about 0.01 s of CPU in a release build): one that did the run's work
// before refusing spends more. A refusal that hangs is stopped by run_cli's 60 s timeout, its
// exit code 124 then failing expect_refused.
TEST_P(RefusalTest, OneLineExitTwoNothingLeft) {
  const double cpu_before = children_cpu_seconds();
  CliResult r = run_cli(GetParam().args, 60);
  const double cpu_seconds = children_cpu_seconds() - cpu_before;
  expect_refused(r, GetParam().expected);
  EXPECT_LT(cpu_seconds, 10.0) << "refusing must be quick";
  fs::remove_all(r.work_dir);
}

INSTANTIATE_TEST_SUITE_P(Cli, RefusalTest, ::testing::ValuesIn(refusals()),
                         [](const ::testing::TestParamInfo<Refusal>& info) { return info.param.label; });

// Runs the binary in `work` with one resource limit set (SIGXFSZ ignored, so a file over
// RLIMIT_FSIZE is a write error, not a kill); returns the exit code, stderr in `err`.
int run_limited(const std::string& work, int resource, rlim_t limit, const std::vector<std::string>& args,
                std::string& err) {
  const std::string err_path = make_temp_dir() + "/err";
  pid_t child = fork();
  if (child == 0) {
    if (chdir(work.c_str()) != 0) _exit(99);
    signal(SIGXFSZ, SIG_IGN);
    rlimit lim{limit, limit};
    if (setrlimit(resource, &lim) != 0) _exit(97);
    if (!freopen("/dev/null", "w", stdout) || !freopen(err_path.c_str(), "w", stderr)) _exit(96);
    const std::string bin = attnprof::testing::attnprof_binary();
    std::vector<char*> argv{const_cast<char*>(bin.c_str())};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(98);
  }
  int status = 0;
  waitpid(child, &status, 0);
  err = read_whole_file(err_path);
  fs::remove_all(fs::path(err_path).parent_path());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Issue 17, item 4: the preflight honours ulimit -v, naming it. naive at 1x16x8192x64 bf16 keeps two
// 1·16·8192² bf16 score tensors (4 GiB); the address space is capped at 2 GiB.
TEST(MemoryLimit, UlimitVIsHonouredAndNamed) {
  const std::string work = make_temp_dir();
  std::string err;
  const int code = run_limited(work, RLIMIT_AS, rlim_t{2} << 30,
                               {"run", "--variant", "naive", "--device", "cpu", "--batch", "1", "--heads", "16",
                                "--seq", "8192", "--out", work + "/traces"},
                               err);
  EXPECT_EQ(code, 2) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("ulimit -v (RLIMIT_AS)"), std::string::npos) << err;
  EXPECT_NE(err.find("largest --seq"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(work + "/traces"));
  fs::remove_all(work);
}

// Issue 17, item 11: a write error while checkpointing (the JSON over RLIMIT_FSIZE, the CSV under it)
// renames neither file: both still hold the previous sweep's rows. The same sweep runs twice, so
// its files have the same names (sweep_stem) and the second would replace the first's.
TEST(SweepFiles, WriteErrorLeavesThePairAsItWas) {
  const std::string work = make_temp_dir();
  const std::string out = work + "/s";
  const std::vector<std::string> sweep = {"sweep", "--device", "cpu", "--batch", "1", "--heads", "2", "--seq", "16",
                                          "--variants", "naive", "--no-profile", "--out", out};
  CliResult first = run_cli(sweep);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string csv_path = results_path(out, "sweep", "csv"), json_path = results_path(out, "sweep", "json");
  const std::string csv = read_whole_file(csv_path), json = read_whole_file(json_path);
  ASSERT_LT(csv.size() + 64, json.size()) << "the test needs the JSON larger than the CSV";
  std::string err;
  const int code = run_limited(work, RLIMIT_FSIZE, (csv.size() + json.size()) / 2, sweep, err);
  EXPECT_EQ(code, 1) << err;
  EXPECT_NE(err.find(fs::path(json_path).filename().string()), std::string::npos) << err;
  EXPECT_EQ(read_whole_file(csv_path), csv);
  EXPECT_EQ(read_whole_file(json_path), json);
  for (const std::string& name : entries_under(out)) EXPECT_EQ(name.find(".tmp."), std::string::npos) << name;
  fs::remove_all(work);
  fs::remove_all(first.work_dir);
}

// Above /proc/sys/kernel/pid_max: a PID no process has, whatever else runs on the machine (a
// child's PID, reaped, can be given to another process before the binary looks).
long pid_never_in_use() {
  long pid_max = 4194304;  // PID_MAX_LIMIT, the most pid_max can be set to on 64-bit Linux
  std::ifstream("/proc/sys/kernel/pid_max") >> pid_max;
  return pid_max + 1;
}

// Issue 17, item 15: a temporary left by a dead process is removed when the next file is written beside
// it; one whose process is alive (this test) is kept.
TEST(Temporaries, StaleOnesOfDeadProcessesAreRemoved) {
  const long dead = pid_never_in_use();
  ASSERT_NE(kill(static_cast<pid_t>(dead), 0), 0);
  ASSERT_EQ(errno, ESRCH);
  const std::string out = make_temp_dir();
  const std::string stale = out + "/.sweep.csv.tmp." + std::to_string(dead) + ".0";
  const std::string live = out + "/.sweep.json.tmp." + std::to_string(getpid()) + ".3";
  const std::string other = out + "/.notes.tmp.x.1";  // not a temporary's name: kept
  for (const std::string& path : {stale, live, other}) std::ofstream(path) << "partial";
  CliResult r = run_cli({"sweep", "--device", "cpu", "--batch", "1", "--heads", "2", "--seq", "16", "--variants",
                         "naive", "--no-profile", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(other));
  EXPECT_FALSE(results_path(out, "sweep", "csv").empty());
  fs::remove_all(out);
  fs::remove_all(r.work_dir);
}

}  // namespace
