// Decode shapes through the real binary: compare with --seq 1 --seq-k N runs every variant on
// that shape, and sweep --seq-k sweeps the key length at a fixed --seq, each point's row carrying
// its own seq_k; a bad --seq-k list is one line naming the flag, exit 2.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/cli_runner.h"

using namespace attnprof::testing;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kDecodeShape = {"--device", "cpu", "--batch", "1", "--heads", "4", "--kv-heads", "1",
                                               "--head-dim", "32", "--threads", "1"};

std::vector<std::string> with_shape(std::vector<std::string> args) {
  args.insert(args.end(), kDecodeShape.begin(), kDecodeShape.end());
  return args;
}

}  // namespace

TEST(DecodeShapesCli, CompareRunsOneQueryRowAgainstManyKeys) {
  CliResult r = run_cli(with_shape({"compare", "--variants", "math,efficient,flash", "--seq", "1", "--seq-k", "1031",
                                    "--causal-align", "bottom-right", "--format", "json", "--out", "{work}/c"}),
                        300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rows"].size(), 3u) << r.out;
  for (const auto& row : j["rows"]) {
    EXPECT_EQ(row["seq"], 1) << row.dump();
    EXPECT_EQ(row["seq_k"], 1031) << row.dump();
    EXPECT_LT(row["rel_err"].get<double>(), 1e-2) << row.dump();
  }
  fs::remove_all(r.work_dir);
}

TEST(DecodeShapesCli, SweepVariesTheKeyLengthAtAFixedSeq) {
  CliResult r = run_cli(with_shape({"sweep", "--variants", "efficient", "--seq", "1", "--seq-k", "256,512,...,1024",
                                    "--no-profile", "--forwards", "1", "--out", "{work}/s"}),
                        300);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const std::string path = results_path(r.work_dir + "/s", "sweep", "json");
  ASSERT_FALSE(path.empty()) << r.out;
  EXPECT_NE(path.find("_s1_k256+512+1024_d32_"), std::string::npos) << path;
  const nlohmann::json j = nlohmann::json::parse(read_whole_file(path));
  ASSERT_EQ(j["rows"].size(), 3u);
  std::vector<std::int64_t> keys;
  for (const auto& row : j["rows"]) {
    EXPECT_EQ(row["seq"], 1) << row.dump();
    EXPECT_EQ(row["status"], "ok") << row.dump();
    keys.push_back(row["seq_k"].get<std::int64_t>());
  }
  EXPECT_EQ(keys, (std::vector<std::int64_t>{256, 512, 1024}));
  fs::remove_all(r.work_dir);
}

TEST(DecodeShapesCli, ABadSeqKListIsOneLineNamingTheFlag) {
  CliResult r = run_cli(with_shape({"sweep", "--seq", "1", "--seq-k", "512,256", "--out", "{work}/s"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("attnprof: --seq-k: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(fs::exists(r.work_dir + "/s")) << "nothing written for a refused sweep";
  fs::remove_all(r.work_dir);
}
