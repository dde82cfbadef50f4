// End-to-end checks of `run` and `compare` through the binary.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "cli/cli_runner.h"
#include "common/child_process.h"

using attnprof::testing::catches_signal;
using attnprof::testing::ChildGuard;
using attnprof::testing::CliResult;
using attnprof::testing::run_cli;
using attnprof::testing::shell_quote;

namespace {

std::string source_dir() { return ATTNPROF_SOURCE_DIR; }

// Debian's interpreter, which python3-numpy installs into, even when another python3 is first on PATH.
std::string python_with_numpy() {
  return std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
}

TEST(RunCommand, DumpMatchesNumpyFp64Attention) {
  for (const char* dtype : {"fp32", "bf16"}) {
    for (const char* layout : {"bhsd", "bshd"}) {
      CliResult r = run_cli({"run", "--device", "cpu", "--variant", "flash", "--batch", "2", "--heads", "4",
                             "--kv-heads", "2", "--seq", "77", "--seq-k", "90", "--head-dim", "32", "--dtype", dtype,
                             "--layout", layout, "--dump", "{work}/dump", "--out", "{work}/traces"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      std::string check = python_with_numpy() + " " + shell_quote(source_dir() + "/tests/cli/check_dump.py") + " " +
                          shell_quote(r.work_dir + "/dump") + " 1 " + (std::string(dtype) == "fp32" ? "1e-5" : "1e-2");
      EXPECT_EQ(std::system(check.c_str()), 0) << dtype << " " << layout;
      std::filesystem::remove_all(r.work_dir);
    }
  }
}

TEST(RunCommand, JsonHasTheDocumentedKeys) {
  const auto start = std::chrono::steady_clock::now();
  CliResult r = run_cli({"run", "--device", "cpu", "--variant", "naive", "--batch", "1", "--heads", "2", "--seq",
                         "64", "--format", "json", "--out", "{work}/traces"});
  const double process_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  for (const char* key : {"variant", "device", "dtype", "median_ms", "peak_extra_bytes", "rel_err",
                          "kernels_per_forward"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["variant"], "naive");
  EXPECT_LE(j["rel_err"].get<double>(), 1e-2);
  // naive's prepare builds its mask: a measured, positive one-time setup, a part of the run, so
  // less than the whole process took as the test timed it (a bound that a sanitizer build or a
  // busy machine stretches as much as the setup).
  ASSERT_TRUE(j.contains("setup_ms"));
  EXPECT_GT(j["setup_ms"].get<double>(), 0.0);
  EXPECT_LT(j["setup_ms"].get<double>(), process_ms) << "the process took " << process_ms << " ms in all";
  EXPECT_TRUE(std::filesystem::exists(j["trace"].get<std::string>()));
  std::filesystem::remove_all(r.work_dir);
}

TEST(CompareCommand, EveryCpuVariantHasARowWithItsWorkPerForward) {
  // Two rounds, the 10 kept passes without --min-time: the rows' work and insights are checked, not timing.
  CliResult r = run_cli({"compare", "--device", "cpu", "--batch", "1", "--heads", "2", "--seq", "128", "--rounds", "2",
                         "--min-time", "0", "--format", "json", "--out", "{work}/traces"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  std::map<std::string, nlohmann::json> rows;
  for (auto& row : j["rows"]) rows[row["variant"]] = row;
  const std::map<std::string, double> expected_work{
      {"naive", 6}, {"inplace", 5}, {"fused", 3}, {"efficient", 1}, {"flash", 1}};
  for (auto& [name, work] : expected_work) {
    ASSERT_TRUE(rows.count(name)) << name;
    EXPECT_EQ(rows[name]["kernels_per_forward"].get<double>(), work) << name;
    EXPECT_LE(rows[name]["rel_err"].get<double>(), 1e-2) << name;
  }
  ASSERT_TRUE(rows.count("math"));
  EXPECT_GE(rows["math"]["kernels_per_forward"].get<double>(), 15);
  EXPECT_LE(rows["math"]["kernels_per_forward"].get<double>(), 20);
  ASSERT_TRUE(rows.count("cudnn"));
  EXPECT_TRUE(rows["cudnn"].contains("refused"));
  // Issue 7, acceptance 1 and 4: insights derived from each run's trace; TFLOP/s and % of peak.
  auto codes = [&](const std::string& variant) {
    std::set<std::string> found;
    for (auto& insight : rows[variant]["insights"]) found.insert(insight["code"].get<std::string>());
    return found;
  };
  for (const char* code : {"hidden_copy", "s2_materialized"}) EXPECT_TRUE(codes("naive").count(code)) << code;
  for (const char* code : {"mask_rebuilt", "safe_softmax", "s2_materialized"}) {
    EXPECT_TRUE(codes("math").count(code)) << code;
  }
  EXPECT_TRUE(codes("efficient").count("single_fused_kernel"));
  EXPECT_TRUE(codes("flash").count("single_fused_kernel"));
  for (auto& [name, work] : expected_work) {
    EXPECT_GT(rows[name]["tflops"].get<double>(), 0) << name;
    EXPECT_GT(rows[name]["pct_of_peak"].get<double>(), 0) << name;
  }
  std::filesystem::remove_all(r.work_dir);
}

// SIGINT, SIGTERM or SIGHUP in the middle of writing leaves only complete files (no temporaries).
// The signal goes once the binary catches it (its handlers are installed before it writes
// anything) and has begun writing its traces, however slowly it starts (ASan, a busy machine).
TEST(Interrupt, LeavesNoPartialFile) {
  const std::string bin = attnprof::testing::attnprof_binary();
  const std::filesystem::path exe = std::filesystem::canonical(bin);
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) {
    SCOPED_TRACE(strsignal(signal_number));
    std::string work = attnprof::testing::make_temp_dir();
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      if (chdir(work.c_str()) != 0) _exit(99);
      execl(bin.c_str(), bin.c_str(), "compare", "--device", "cpu", "--batch", "1", "--heads", "4", "--seq", "512",
            "--out", "traces", static_cast<char*>(nullptr));
      _exit(98);
    }
    ChildGuard child(pid);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    auto wait_until = [&](const auto& ready) {
      while (!ready() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      return ready();
    };
    ASSERT_TRUE(wait_until([&] { return catches_signal(pid, exe, signal_number); }))
        << "the binary had no handler for signal " << signal_number << " 60 s after it started";
    const std::filesystem::path traces = std::filesystem::path(work) / "traces";
    ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(traces) && !std::filesystem::is_empty(traces); }))
        << "the binary wrote nothing into " << traces << " within 60 s";
    kill(pid, signal_number);
    const std::optional<int> status = child.wait_for(std::chrono::seconds(60));
    ASSERT_TRUE(status) << "still running 60 s after the signal";
    ASSERT_TRUE(WIFEXITED(*status)) << "the process must exit through the cleanup handler";
    EXPECT_EQ(WEXITSTATUS(*status), 128 + signal_number);
    for (auto& entry : std::filesystem::recursive_directory_iterator(work)) {
      if (entry.is_directory()) continue;
      std::string name = entry.path().filename().string();
      EXPECT_EQ(name.find(".tmp."), std::string::npos) << "temporary left: " << name;
      EXPECT_GT(entry.file_size(), 0u) << name;
      if (entry.path().extension() == ".gz") {
        std::string test = "gzip -t " + shell_quote(entry.path().string());
        EXPECT_EQ(std::system(test.c_str()), 0) << "incomplete: " << name;
      }
    }
    std::filesystem::remove_all(work);
  }
}

}  // namespace

namespace {

// A CPU run's trace, read back by `attnprof inspect`, reports the work per step the run printed:
// naive 6, inplace 5, fused 3, efficient 1, flash 1 (and math's 15-20), one attn_fwd per step.
TEST(InspectOwnTrace, ReproducesTheRunsWorkPerForward) {
  const std::map<std::string, std::pair<double, double>> expected{
      {"naive", {6, 6}}, {"inplace", {5, 5}}, {"math", {15, 20}}, {"fused", {3, 3}}, {"efficient", {1, 1}},
      {"flash", {1, 1}}};
  for (auto& [variant, range] : expected) {
    CliResult run = run_cli({"run", "--device", "cpu", "--variant", variant, "--batch", "1", "--heads", "2", "--seq",
                             "64", "--min-time", "0", "--format", "json", "--out", "{work}/traces"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    nlohmann::json r = nlohmann::json::parse(run.out);
    double work = r["kernels_per_forward"].get<double>();
    EXPECT_GE(work, range.first) << variant;
    EXPECT_LE(work, range.second) << variant;
    CliResult inspect = run_cli({"inspect", r["trace"].get<std::string>(), "--format", "json"});
    ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
    nlohmann::json i = nlohmann::json::parse(inspect.out);
    ASSERT_EQ(i["steps"].size(), 10u) << variant;  // the active steps of wait 1, warmup 1, active 10
    for (auto& step : i["steps"]) {
      EXPECT_EQ(step["kernels"].get<double>(), work) << variant << " " << step["name"];
      EXPECT_EQ(step["memcpy"].get<double>(), 0) << variant;
    }
    std::filesystem::remove_all(run.work_dir);
    std::filesystem::remove_all(inspect.work_dir);
  }
}

}  // namespace

namespace {

std::set<std::string> inspect_codes(const std::string& variant) {
  CliResult r = run_cli({"inspect", source_dir() + "/tests/data/pytorch-traces/8_16_1024_64_" + variant + ".json.gz",
                         "--format", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> codes;
  const nlohmann::json parsed = nlohmann::json::parse(r.out);  // the loop must not outlive it
  for (auto& insight : parsed["insights"]) codes.insert(insight["code"].get<std::string>());
  std::filesystem::remove_all(r.work_dir);
  return codes;
}

// Issue 7, acceptance 2: the rules on PyTorch's own traces.
TEST(InspectPyTorchTraces, InsightsFromTheRules) {
  std::set<std::string> naive = inspect_codes("naive");
  EXPECT_TRUE(naive.count("hidden_copy"));
  std::set<std::string> math = inspect_codes("math");
  for (const char* code : {"fp32_gemm_cuda_cores", "mask_rebuilt", "safe_softmax"}) EXPECT_TRUE(math.count(code)) << code;
  std::set<std::string> flash = inspect_codes("flash");
  EXPECT_TRUE(flash.count("single_fused_kernel"));
  EXPECT_TRUE(flash.count("low_occupancy_by_design"));
}

TEST(InspectPyTorchTraces, LowOccupancyShowsTheRegisterArithmetic) {
  CliResult r = run_cli(
      {"inspect", source_dir() + "/tests/data/pytorch-traces/8_16_1024_64_flash.json.gz", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json parsed = nlohmann::json::parse(r.out);
  std::string text;
  for (auto& insight : parsed["insights"]) {
    if (insight["code"] == "low_occupancy_by_design") text = insight["text"];
  }
  EXPECT_NE(text.find("255 regs × 128 threads = 32,640 of 65,536 → 2 blocks → 8 of 64 warps = 12.5%"),
            std::string::npos)
      << text;
  std::filesystem::remove_all(r.work_dir);
}

TEST(InspectPyTorchTraces, ExpectNamesTheMissedCopy) {
  CliResult r = run_cli({"inspect", source_dir() + "/tests/data/pytorch-traces/8_16_1024_64_naive.json.gz", "--expect",
                         "gemm,mul,masked_fill,softmax,gemm", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json expect = nlohmann::json::parse(r.out)["expect"];
  EXPECT_NE(expect.dump().find("Memcpy DtoD"), std::string::npos) << expect.dump();
  std::filesystem::remove_all(r.work_dir);
}

}  // namespace
