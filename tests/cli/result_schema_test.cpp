// One result schema: a row of `run --format json`, of `compare --format json` (and its
// compare.json) and of sweep.json carries the same keys with the same JSON types; counts are
// integers; sweep.csv writes the integers exactly; throughput is TFLOP/s in run and compare.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_runner.h"

using attnprof::testing::CliResult;
using attnprof::testing::results_path;
using attnprof::testing::run_cli;

namespace {

// The shared keys (docs/report.md, "One result schema") and the JSON type each must have.
const std::map<std::string, nlohmann::json::value_t>& shared_keys() {
  using t = nlohmann::json::value_t;
  static const std::map<std::string, t> keys = {
      {"variant", t::string},           {"device", t::string},           {"dtype", t::string},
      {"batch", t::number_unsigned},    {"heads", t::number_unsigned},   {"kv_heads", t::number_unsigned},
      {"seq", t::number_unsigned},      {"seq_k", t::number_unsigned},   {"head_dim", t::number_unsigned},
      {"causal", t::boolean},           {"causal_align", t::string},     {"layout", t::string},
      {"device_ms", t::number_float},   {"cpu_ms", t::number_float},     {"setup_ms", t::number_float},
      {"tflops", t::number_float},      {"pct_of_peak", t::number_float}, {"rel_err", t::number_float},
      {"nan_output", t::boolean},       {"kernels_per_forward", t::number_unsigned},
      {"memcpy_per_forward", t::number_unsigned}, {"memset_per_forward", t::number_unsigned},
      {"peak_extra_bytes", t::number_unsigned}, {"flops", t::number_unsigned}, {"trace_path", t::string}};
  return keys;
}

// nlohmann reads a non-negative integer as number_unsigned and writes a signed one the same way.
nlohmann::json::value_t type_of(const nlohmann::json& v) {
  return v.type() == nlohmann::json::value_t::number_integer && v.get<std::int64_t>() >= 0
             ? nlohmann::json::value_t::number_unsigned
             : v.type();
}

void expect_schema(const nlohmann::json& row, const std::string& where) {
  for (const auto& [key, type] : shared_keys()) {
    ASSERT_TRUE(row.contains(key)) << where << " has no \"" << key << "\": " << row.dump();
    EXPECT_EQ(type_of(row[key]), type) << where << " \"" << key << "\" is " << row[key].dump();
  }
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

const std::vector<std::string> kShape = {"--device", "cpu", "--batch", "1", "--heads", "2", "--head-dim", "32",
                                          "--dtype", "fp32", "--no-causal"};

std::vector<std::string> with_shape(std::vector<std::string> args) {
  args.insert(args.end(), kShape.begin(), kShape.end());
  return args;
}

TEST(ResultSchema, RunCompareAndSweepRowsShareKeysAndTypes) {
  CliResult run = run_cli(with_shape({"run", "--variant", "flash", "--seq", "64", "--format", "json", "--out", "{work}/t"}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  nlohmann::json r = nlohmann::json::parse(run.out);
  expect_schema(r, "run");
  const std::int64_t flops = 4 * 1 * 2 * 64 * 64 * 32;  // 4·B·H·Sq·Sk·D, not causal
  EXPECT_EQ(r["flops"].get<std::int64_t>(), flops);
  EXPECT_EQ(r["kernels_per_forward"].get<std::int64_t>(), 1);
  EXPECT_GT(r["pct_of_peak"].get<double>(), 0.0);
  // A CPU row under --no-causal describes neither GPU kernels nor skipped causal tiles.
  const std::string summary = r["summary"];
  for (const char* word : {"sm80", "sm90", "causal"}) EXPECT_EQ(summary.find(word), std::string::npos) << summary;

  CliResult compare = run_cli(
      with_shape({"compare", "--variants", "naive,flash", "--seq", "64", "--format", "json", "--out", "{work}/c"}));
  ASSERT_EQ(compare.exit_code, 0) << compare.err;
  nlohmann::json c = nlohmann::json::parse(compare.out);
  ASSERT_EQ(c["rows"].size(), 2u);
  for (const auto& row : c["rows"]) expect_schema(row, "compare " + row["variant"].get<std::string>());
  nlohmann::json saved = read_json(results_path(compare.work_dir + "/c", "compare", "json"));
  for (const auto& row : saved["rows"]) expect_schema(row, "compare.json " + row["variant"].get<std::string>());

  CliResult sweep = run_cli({"sweep", "--variants", "flash", "--seq", "64", "--head-dim", "32", "--device", "cpu",
                             "--batch", "1", "--heads", "2", "--dtype", "fp32", "--no-causal", "--out", "{work}/s"});
  ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
  nlohmann::json s = read_json(results_path(sweep.work_dir + "/s", "sweep", "json"));
  ASSERT_EQ(s["rows"].size(), 1u);
  expect_schema(s["rows"][0], "sweep");
  // sweep.csv: the integers as integers (flops 524288, not 524288.0 or 5.24288e+05).
  std::ifstream csv(results_path(sweep.work_dir + "/s", "sweep", "csv"));
  std::string header, line;
  std::getline(csv, header);
  std::getline(csv, line);
  std::vector<std::string> names, cells;
  for (std::stringstream h(header); std::getline(h, names.emplace_back(), ',');) {}
  for (std::stringstream l(line); std::getline(l, cells.emplace_back(), ',');) {}
  std::map<std::string, std::string> field;
  for (std::size_t i = 0; i < names.size() && i < cells.size(); ++i) field[names[i]] = cells[i];
  EXPECT_EQ(field["flops"], std::to_string(flops)) << line;
  EXPECT_EQ(field["kernels_per_forward"], "1") << line;
  EXPECT_EQ(field["peak_extra_bytes"], std::to_string(s["rows"][0]["peak_extra_bytes"].get<std::int64_t>())) << line;

  for (const CliResult* done : {&run, &compare, &sweep}) std::filesystem::remove_all(done->work_dir);
}

// One unit for throughput: run's text says TFLOP/s, as compare's table header does.
TEST(ResultSchema, RunAndCompareTextUseTflops) {
  CliResult run = run_cli(with_shape({"run", "--variant", "flash", "--seq", "64"}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find(" TFLOP/s"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("GFLOP/s"), std::string::npos) << run.out;
  CliResult compare = run_cli(with_shape({"compare", "--variants", "flash", "--seq", "64"}));
  ASSERT_EQ(compare.exit_code, 0) << compare.err;
  EXPECT_NE(compare.out.find("TFLOP/s"), std::string::npos) << compare.out;
  EXPECT_EQ(compare.out.find("GFLOP/s"), std::string::npos) << compare.out;
  for (const CliResult* done : {&run, &compare}) std::filesystem::remove_all(done->work_dir);
}

}  // namespace
