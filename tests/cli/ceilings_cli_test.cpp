// The machine's ceilings through the binary: measured by the first run into the cache
// (XDG_CACHE_HOME pointed at an empty folder), the very numbers reused by the next runs,
// measured again by `devices --remeasure`, and a corrupt cache file replaced with a note.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli/cli_runner.h"

using attnprof::testing::CliResult;
using attnprof::testing::make_temp_dir;
using attnprof::testing::read_whole_file;
using attnprof::testing::results_path;
using attnprof::testing::run_cli;
using attnprof::testing::ScopedEnv;

namespace fs = std::filesystem;

namespace {

// The one cache file the runs made for the CPU (`devices` on a machine with a GPU also makes one
// for it).
fs::path cache_file(const std::string& cache_home) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(fs::path(cache_home) / "attnprof"))
    if (entry.path().filename().string().rfind("ceilings-cpu-", 0) == 0) files.push_back(entry.path());
  EXPECT_EQ(files.size(), 1u);
  return files.empty() ? fs::path() : files[0];
}

// compare.json's ceilings from a small CPU compare.
nlohmann::json compare_ceilings() {
  CliResult r = run_cli({"compare", "--device", "cpu", "--variants", "naive", "--batch", "1", "--heads", "2", "--seq",
                         "64", "--head-dim", "32", "--format", "json", "--out", "{work}/out"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(read_whole_file(results_path(r.work_dir + "/out", "compare", "json")));
  fs::remove_all(r.work_dir);
  return j["ceilings"];
}

void expect_same_numbers(const nlohmann::json& shown, const nlohmann::json& cached) {
  for (const char* key : {"matmul_tflops", "matmul_bf16_tflops", "copy_gbps", "threads", "measured_at", "matmul_spread",
                          "copy_spread", "matmul_bf16_spread"}) {
    EXPECT_EQ(shown[key], cached[key]) << key;
  }
}

TEST(CeilingsCli, MeasuredOnceThenReusedNumberForNumber) {
  const std::string cache_home = make_temp_dir();
  ScopedEnv xdg("XDG_CACHE_HOME", cache_home.c_str());
  const nlohmann::json first = compare_ceilings();
  const fs::path file = cache_file(cache_home);
  const std::string written = read_whole_file(file);
  const nlohmann::json cached = nlohmann::json::parse(written)["ceilings"];
  expect_same_numbers(first, cached);
  EXPECT_GE(cached["matmul_spread"]["samples"].get<int>(), 5);

  const nlohmann::json second = compare_ceilings();
  expect_same_numbers(second, cached);
  EXPECT_EQ(read_whole_file(file), written) << "the second run rewrote the cache";

  // Numbers planted in the file by hand come out in the next run's JSON as they are.
  nlohmann::json planted = nlohmann::json::parse(written);
  planted["ceilings"]["matmul_tflops"] = 0.123;
  planted["ceilings"]["matmul_spread"] = {{"min", 0.1}, {"max", 0.2}, {"samples", 11}};
  planted["ceilings"]["copy_gbps"] = 4.5;
  planted["ceilings"]["copy_spread"] = {{"min", 4.0}, {"max", 5.0}, {"samples", 13}};
  planted["ceilings"]["measured_at"] = "2000-01-01T00:00:00Z";
  std::ofstream(file) << planted.dump(1);
  const nlohmann::json third = compare_ceilings();
  EXPECT_EQ(third["matmul_tflops"], 0.123);
  EXPECT_EQ(third["copy_gbps"], 4.5);
  EXPECT_EQ(third["matmul_spread"]["samples"], 11);
  EXPECT_EQ(third["measured_at"], "2000-01-01T00:00:00Z");

  // devices --remeasure measures again and rewrites the file.
  CliResult devices = run_cli({"devices", "--remeasure"});
  EXPECT_EQ(devices.exit_code, 0) << devices.err;
  EXPECT_NE(devices.out.find("ceilings cache       " + file.string()), std::string::npos) << devices.out;
  const nlohmann::json remeasured = nlohmann::json::parse(read_whole_file(file))["ceilings"];
  EXPECT_NE(remeasured["measured_at"], "2000-01-01T00:00:00Z");
  EXPECT_NE(remeasured["matmul_spread"], planted["ceilings"]["matmul_spread"]);
  EXPECT_EQ(cache_file(cache_home), file);
  fs::remove_all(devices.work_dir);
  fs::remove_all(cache_home);
}

TEST(CeilingsCli, CorruptCacheIsMeasuredAgainWithANote) {
  const std::string cache_home = make_temp_dir();
  ScopedEnv xdg("XDG_CACHE_HOME", cache_home.c_str());
  (void)compare_ceilings();
  const fs::path file = cache_file(cache_home);
  std::ofstream(file) << "{\"kind\": \"attnprof.ceilings\", \"version\": 1, \"ceil";  // cut short
  CliResult r = run_cli({"compare", "--device", "cpu", "--variants", "naive", "--batch", "1", "--heads", "2", "--seq",
                         "64", "--head-dim", "32", "--format", "json", "--out", "{work}/out"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string note = "attnprof: ceilings cache " + file.string() + " is not usable (not JSON); measuring again\n";
  EXPECT_NE(r.err.find(note), std::string::npos) << r.err;
  const nlohmann::json replaced = nlohmann::json::parse(read_whole_file(file));
  EXPECT_EQ(replaced["kind"], "attnprof.ceilings");
  const nlohmann::json shown = nlohmann::json::parse(read_whole_file(results_path(r.work_dir + "/out", "compare", "json")))["ceilings"];
  expect_same_numbers(shown, replaced["ceilings"]);
  fs::remove_all(r.work_dir);
  fs::remove_all(cache_home);
}

// A cache holding a ceiling far too low (as one measured under heavy load): compare and run say
// so beside the %peak above 100%, naming the cache file and `devices --remeasure`; with a ceiling
// no CPU reaches, the same runs say nothing of it. Both ceilings are planted: a measured one
// would be as low as a loaded machine made it.
TEST(CeilingsCli, RateAboveACachedCeilingIsFlaggedNamingTheCache) {
  const std::string cache_home = make_temp_dir();
  ScopedEnv xdg("XDG_CACHE_HOME", cache_home.c_str());
  ScopedEnv columns("COLUMNS", "1000");  // the note on one line, not wrapped at 100
  const std::vector<std::string> compare = {"compare", "--device", "cpu", "--variants", "naive", "--batch", "1",
                                            "--heads", "2", "--seq", "64", "--head-dim", "32", "--dtype", "fp32"};
  const std::vector<std::string> run = {"run",  "--device", "cpu", "--variant", "naive", "--batch", "1", "--heads",
                                        "2",    "--seq",    "64",  "--head-dim", "32",   "--dtype", "fp32"};
  CliResult measured = run_cli(compare);  // makes the cache file the ceilings are planted in
  ASSERT_EQ(measured.exit_code, 0) << measured.err;
  fs::remove_all(measured.work_dir);
  const fs::path file = cache_file(cache_home);
  const nlohmann::json as_measured = nlohmann::json::parse(read_whole_file(file));

  // 10 PFLOP/s of fp32 (the cache's bound is 100 PFLOP/s): no CPU's forward comes near it.
  nlohmann::json planted = as_measured;
  planted["ceilings"]["matmul_tflops"] = 1e4;
  planted["ceilings"]["matmul_spread"] = {{"min", 0.9e4}, {"max", 1.1e4}, {"samples", 5}};
  std::ofstream(file) << planted.dump(1);
  CliResult high = run_cli(compare);
  ASSERT_EQ(high.exit_code, 0) << high.err;
  EXPECT_EQ(high.out.find("above_ceiling"), std::string::npos) << high.out;
  EXPECT_EQ(high.out.find("%peak above 100%"), std::string::npos) << high.out;
  CliResult high_run = run_cli(run);
  ASSERT_EQ(high_run.exit_code, 0) << high_run.err;
  EXPECT_EQ(high_run.out.find("%peak above 100%"), std::string::npos) << high_run.out;
  EXPECT_EQ(read_whole_file(file), planted.dump(1)) << "the planted ceiling was not used: the cache was rewritten";
  for (const CliResult* r : {&high, &high_run}) fs::remove_all(r->work_dir);

  planted = as_measured;
  // 100 kFLOP/s: the 0.5 MFLOP forward beats it unless it takes over 5 s
  planted["ceilings"]["matmul_tflops"] = 1e-7;
  planted["ceilings"]["matmul_spread"] = {{"min", 0.9e-7}, {"max", 1.1e-7}, {"samples", 5}};
  planted["ceilings"]["measured_at"] = "2000-01-01T00:00:00Z";
  std::ofstream(file) << planted.dump(1);
  const std::string note = "%peak above 100%: faster than the fp32 matmul ceiling 0.0000 TFLOP/s (0.0000–0.0000 over 5 runs";
  const std::string from = "cached in " + file.string() + " on 2000-01-01T00:00:00Z";
  const std::string remeasure = "`attnprof devices --remeasure` measures it again";

  CliResult table = run_cli(compare);
  ASSERT_EQ(table.exit_code, 0) << table.err;
  for (const std::string& part : {note, from, remeasure, std::string("[naive] above_ceiling: %peak above 100%")}) {
    EXPECT_NE(table.out.find(part), std::string::npos) << part << "\n" << table.out;
  }
  std::vector<std::string> as_json = compare;
  as_json.insert(as_json.end(), {"--format", "json"});
  CliResult json = run_cli(as_json);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json row = nlohmann::json::parse(json.out)["rows"][0];
  EXPECT_GT(row["pct_of_peak"].get<double>(), 100.0);
  bool flagged = false;
  for (const auto& insight : row["insights"]) {
    flagged |= insight["code"] == "above_ceiling" && insight["text"].get<std::string>().find(from) != std::string::npos &&
               insight["about"] == nlohmann::json::array({"attn_fwd"});
  }
  EXPECT_TRUE(flagged) << row.dump(1);

  CliResult one = run_cli(run);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.out.find(note), std::string::npos) << one.out;
  EXPECT_NE(one.out.find(remeasure), std::string::npos) << one.out;
  for (const CliResult* r : {&table, &json, &one}) fs::remove_all(r->work_dir);
  fs::remove_all(cache_home);
}

}  // namespace
