// `attnprof sweep` and `attnprof report` end to end, through the binary (ATTNPROF_BIN).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/cli_runner.h"

namespace attnprof::testing {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool registered(const char* command) {
  CliResult help = run_cli({command, "--help"});
  fs::remove_all(help.work_dir);
  return help.exit_code == 0;
}

#define REQUIRE_COMMAND(name) \
  if (!registered(name)) GTEST_SKIP() << "`attnprof " name "` is not registered in src/cli/main.cpp yet"

TEST(SweepCli, WritesCsvAndJsonForEveryPoint) {
  REQUIRE_COMMAND("sweep");
  CliResult r = run_cli({"sweep", "--device", "cpu", "--batch", "1", "--heads", "2", "--seq", "64,128", "--variants",
                         "naive,flash", "--threads", "1", "--no-profile", "--out", "{work}/sw"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::sort(r.files.begin(), r.files.end());
  // Named by the configuration (sweep_stem): threads, the lists, the variants, --no-profile.
  const std::string stem = "sw/sweep_1_2_cpu_t1_noprofile_s64+128_d64_vnaive+flash";
  EXPECT_EQ(r.files, (std::vector<std::string>{stem + ".csv", stem + ".json"}));
  EXPECT_NE(r.out.find("[4/4] flash S=128 D=64: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("4 points, 4 run, 0 skipped for memory, 0 refused, 0 failed"), std::string::npos) << r.out;
  nlohmann::json j = nlohmann::json::parse(slurp(fs::path(r.work_dir) / (stem + ".json")));
  ASSERT_EQ(j["rows"].size(), 4u);
  for (const auto& row : j["rows"]) {
    EXPECT_EQ(row["status"], "ok");
    EXPECT_GT(row["device_ms"].get<double>(), 0);
    EXPECT_LT(row["rel_err"].get<double>(), 1e-2);  // bf16 tolerance against fp64
  }
  std::string csv = slurp(fs::path(r.work_dir) / (stem + ".csv"));
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5);

  // The report from that directory: one HTML file beside the results.
  REQUIRE_COMMAND("report");
  CliResult report = run_cli({"report", r.work_dir + "/sw"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  std::string html = slurp(fs::path(r.work_dir) / "sw/report.html");
  EXPECT_NE(html.find("<svg class=\"plot\""), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos);
  fs::remove_all(r.work_dir);
  fs::remove_all(report.work_dir);
}

TEST(SweepCli, SkipsAPointThatDoesNotFitInMemory) {
  REQUIRE_COMMAND("sweep");
  // naive at 64 × 64 × 65536²: petabytes of scores; skipped, never allocated.
  CliResult r = run_cli({"sweep", "--device", "cpu", "--batch", "64", "--heads", "64", "--seq", "65536", "--variants",
                         "naive", "--no-profile", "--out", "{work}"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(slurp(fs::path(r.work_dir) / "sweep_64_64_cpu_noprofile_s65536_d64_vnaive.json"));
  ASSERT_EQ(j["rows"].size(), 1u);
  EXPECT_EQ(j["rows"][0]["status"], "skipped");
  EXPECT_EQ(j["rows"][0]["reason"].get<std::string>().rfind("needs ", 0), 0u) << j["rows"][0]["reason"];
  EXPECT_TRUE(j["rows"][0]["device_ms"].is_null());
  fs::remove_all(r.work_dir);
}

TEST(SweepCli, BadListIsOneLineAndNoFiles) {
  REQUIRE_COMMAND("sweep");
  CliResult r = run_cli({"sweep", "--seq", "512,abc", "--out", "{work}/sw"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.files.empty());
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("--seq: 'abc' is not an integer"), std::string::npos) << r.err;
  fs::remove_all(r.work_dir);
}

// Ctrl-C after the first point: the sweep exits 130 and leaves its two files, whole, holding
// the finished points, and nothing else. --min-time 0: each point's 10 kept forwards, however
// fast (the stem's mt0); the first point's files may take long to appear under ASan on a busy
// machine, and the interrupt is sent only once they have.
TEST(SweepCli, InterruptLeavesOnlyCompleteFiles) {
  REQUIRE_COMMAND("sweep");
  const std::string work = make_temp_dir();
  const std::string kStem = "sweep_1_4_cpu_t1_mt0_s256+512+1024+2048+4096+8192_d64_vmath+naive";
  constexpr int kFirstPointSeconds = 240;
  const std::string script =
      "cd " + shell_quote(work) + " || exit 1; " + shell_quote(attnprof_binary()) +
      " sweep --device cpu --batch 1 --heads 4 --seq 256,512,...,8192 --variants math,naive --threads 1"
      " --min-time 0 --out sw >out.txt 2>err.txt & pid=$!; "
      "while [ ! -f sw/" + kStem + ".json ] && [ $SECONDS -lt " + std::to_string(kFirstPointSeconds) +
      " ] && kill -0 $pid 2>/dev/null; do sleep 0.05; done; "
      "[ -f sw/" + kStem + ".json ] || { kill -KILL $pid; wait $pid; exit 3; }; "
      "kill -INT $pid; wait $pid; echo $? > rc.txt";
  const int status = std::system(("bash -c " + shell_quote(script)).c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 3)
      << "no sw/" << kStem << ".json within " << kFirstPointSeconds << " s (or the sweep ended without it); stdout:\n"
      << slurp(fs::path(work) / "out.txt") << "stderr:\n" << slurp(fs::path(work) / "err.txt");
  ASSERT_EQ(status, 0);
  EXPECT_EQ(slurp(fs::path(work) / "rc.txt"), "130\n") << slurp(fs::path(work) / "err.txt");
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(fs::path(work) / "sw")) {
    const std::string name = entry.path().filename().string();
    if (name.ends_with(".json.gz") || name.ends_with(".txt")) continue;  // the finished points' traces, tables
    files.push_back(name);  // anything else: the sweep's .csv and .json, or a temporary left behind
  }
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{kStem + ".csv", kStem + ".json"}));
  nlohmann::json j = nlohmann::json::parse(slurp(fs::path(work) / "sw" / (kStem + ".json")));
  const std::size_t rows = j["rows"].size();
  EXPECT_GE(rows, 1u);
  EXPECT_LT(rows, 12u);
  std::string csv = slurp(fs::path(work) / "sw" / (kStem + ".csv"));
  EXPECT_EQ(static_cast<std::size_t>(std::count(csv.begin(), csv.end(), '\n')), rows + 1);
  fs::remove_all(work);
}

}  // namespace
}  // namespace attnprof::testing
