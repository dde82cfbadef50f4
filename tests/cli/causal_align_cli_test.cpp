// Issue 8, item 5 through the binary: `compare --seq 256 --seq-k 64 --causal-align bottom-right`
// leaves the first 192 query rows of every head with no key. naive and inplace write NaN there
// (as PyTorch's naive module) and the glance table flags nan_output on their rows with the error
// over the 64 defined rows; math, fused, efficient and flash write zeros and flag nothing.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_runner.h"

using attnprof::testing::CliResult;
using attnprof::testing::run_cli;

namespace {

const std::vector<std::string> kShape{"--device", "cpu", "--batch", "1", "--heads", "2", "--seq", "256", "--seq-k",
                                      "64", "--head-dim", "64", "--causal-align", "bottom-right", "--no-profile",
                                      "--repeat", "1"};

std::vector<std::string> with_shape(std::vector<std::string> args) {
  args.insert(args.end(), kShape.begin(), kShape.end());
  return args;
}

bool gives_nan(const std::string& variant) { return variant == "naive" || variant == "inplace"; }

TEST(CausalAlignCompare, JsonFlagsNanOutputOnNaiveAndInplaceOnly) {
  CliResult r = run_cli(with_shape({"compare", "--format", "json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  std::map<std::string, nlohmann::json> rows;
  for (const auto& row : j["rows"]) rows[row["variant"].get<std::string>()] = row;
  for (const std::string name : {"naive", "inplace", "math", "fused", "efficient", "flash"}) {
    ASSERT_TRUE(rows.count(name)) << name;
    const nlohmann::json& row = rows[name];
    EXPECT_EQ(row["causal_align"], "bottom-right") << name;
    EXPECT_EQ(row["fully_masked_rows"].get<std::int64_t>(), 2 * 192) << name;
    // the error over the 2·64 rows that see a key is a number for every variant
    ASSERT_TRUE(row["rel_err"].is_number()) << name << ": " << row.dump();
    EXPECT_LE(row["rel_err"].get<double>(), 1e-2) << name;
    std::set<std::string> codes;
    for (const auto& insight : row["insights"]) codes.insert(insight["code"].get<std::string>());
    if (gives_nan(name)) {
      EXPECT_TRUE(row["nan_output"].get<bool>()) << name;
      EXPECT_TRUE(row["nan_only_in_masked_rows"].get<bool>()) << name;
      EXPECT_EQ(row["fully_masked_rows_nan"].get<std::int64_t>(), 2 * 192) << name;
      EXPECT_TRUE(codes.count("nan_output")) << name;
    } else {
      EXPECT_FALSE(row["nan_output"].get<bool>()) << name;
      EXPECT_EQ(row["fully_masked_rows_zero"].get<std::int64_t>(), 2 * 192) << name;
      EXPECT_FALSE(codes.count("nan_output")) << name;
    }
  }
  // FLOPs count the visible pairs: rows 192..255 see 1..64 keys, 4·B·H·D·(64·65/2).
  EXPECT_DOUBLE_EQ(rows["flash"]["flops"].get<double>(), 4.0 * 1 * 2 * 64 * (64.0 * 65 / 2));
  std::filesystem::remove_all(r.work_dir);
}

TEST(CausalAlignCompare, GlanceTableShowsNanOutputOnTheNaiveRows) {
  CliResult r = run_cli(with_shape({"compare", "--variants", "naive,inplace,flash"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Each variant's table row starts with its name; below the table every insight is listed once,
  // "▸ [naive, inplace] code: text", its wrapped lines indented.
  std::map<std::string, std::string> row_line;
  std::vector<std::string> insights;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    for (const char* name : {"naive", "inplace", "flash"}) {
      if (line.rfind(std::string(name) + " ", 0) == 0) row_line[name] = line;
    }
    if (line.rfind("\u25b8 [", 0) == 0) {
      insights.push_back(line);
    } else if (!insights.empty() && line.rfind("    ", 0) == 0) {
      insights.back() += " " + line.substr(line.find_first_not_of(' '));
    }
  }
  auto attributed = [&](const std::string& name, const std::string& code) -> std::string {
    for (const std::string& insight : insights) {
      const std::string names = insight.substr(0, insight.find(']') + 1);
      const bool named = names.find("[" + name + "]") != std::string::npos ||
                         names.find("[" + name + ",") != std::string::npos ||
                         names.find(" " + name + ",") != std::string::npos ||
                         names.find(" " + name + "]") != std::string::npos;
      if (named && insight.find("] " + code + ":") != std::string::npos) return insight;
    }
    return "";
  };
  for (const char* name : {"naive", "inplace"}) {
    const std::string nan = attributed(name, "nan_output");
    EXPECT_NE(nan.find("PyTorch's naive module"), std::string::npos) << r.out;
    // the err column holds the defined rows' error, not "nan"
    ASSERT_FALSE(row_line[name].empty()) << r.out;
    EXPECT_EQ((row_line[name] + " ").find(" nan "), std::string::npos) << r.out;
  }
  EXPECT_EQ(attributed("flash", "nan_output"), "") << r.out;
  std::filesystem::remove_all(r.work_dir);
}

TEST(CausalAlignRun, TextAndJsonNameTheAlignment) {
  CliResult text = run_cli(with_shape({"run", "--variant", "naive"}));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("causal bottom-right"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("384 rows see no key: 384 all NaN, 0 all zero"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("nan_output"), std::string::npos) << text.out;
  CliResult json = run_cli(with_shape({"run", "--variant", "math", "--format", "json"}));
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["causal_align"], "bottom-right");
  EXPECT_EQ(j["fully_masked_rows_zero"].get<std::int64_t>(), 384);
  EXPECT_FALSE(j["nan_output"].get<bool>());
  std::filesystem::remove_all(text.work_dir);
  std::filesystem::remove_all(json.work_dir);
}

}  // namespace
