// Issue 17, items 12 and 14: `attnprof report` on inputs that are not what compare and sweep
// write: one line naming the file and the field, exit 2, no report.html; --out problems are found
// before anything is drawn.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/cli_runner.h"

using attnprof::testing::CliResult;
using attnprof::testing::make_temp_dir;
using attnprof::testing::run_cli;
using attnprof::testing::read_whole_file;

namespace {

namespace fs = std::filesystem;

constexpr const char* kEmptySweep = R"({"kind": "attnprof.sweep", "version": 1, "rows": []})";

// A sweep.json with one good row, then `key` set to `value` (JSON text).
std::string sweep_with_row(const std::string& key, const std::string& value) {
  nlohmann::json row = {{"variant", "naive"}, {"device", "cpu"}, {"batch", 1},         {"heads", 2},
                        {"kv_heads", 2},      {"seq", 16},       {"head_dim", 64},     {"dtype", "bf16"},
                        {"causal", true},     {"status", "ok"},  {"device_ms", 0.5}};
  row[key] = nlohmann::json::parse(value);
  return nlohmann::json{{"kind", "attnprof.sweep"}, {"version", 1}, {"rows", nlohmann::json::array({row})}}.dump();
}

struct BadReport {
  std::string label;
  std::string file;     // compare.json or sweep.json
  std::string content;
  std::vector<std::string> expected;  // each must appear in the one stderr line
};
std::ostream& operator<<(std::ostream& os, const BadReport& c) { return os << c.label; }

std::vector<BadReport> bad_reports() {
  return {
      {"sweep_not_json", "sweep.json", "{\"rows\": [", {"sweep.json", "not valid JSON"}},
      {"sweep_top_level_array", "sweep.json", "[]", {"sweep.json", "top level: not a JSON object"}},
      {"sweep_rows_not_array", "sweep.json", R"({"rows": 3})", {"sweep.json", "rows"}},
      {"sweep_row_dtype_unknown", "sweep.json", sweep_with_row("dtype", R"("fp8")"),
       {"sweep.json", "rows[0].dtype", "fp8"}},
      {"sweep_row_seq_a_string", "sweep.json", sweep_with_row("seq", R"("long")"), {"sweep.json", "rows[0].seq"}},
      {"sweep_row_device_unknown", "sweep.json", sweep_with_row("device", R"("tpu")"),
       {"sweep.json", "rows[0].device"}},
      {"compare_row_variant_missing", "compare.json", R"({"rows": [{"summary": "x"}]})", {"compare.json", "rows[0]"}},
      {"compare_row_spec_dtype", "compare.json",
       R"({"rows": [{"variant": "naive", "spec": {"dtype": "fp8"}}]})", {"compare.json", "rows[0].spec.dtype"}},
      {"sweep_row_head_dim_negative", "sweep.json", sweep_with_row("head_dim", "-3"),
       {"sweep.json", "rows[0].head_dim", "must be a positive integer (got -3)"}},
      {"compare_row_spec_batch_zero", "compare.json",
       R"({"rows": [{"variant": "naive", "spec": {"batch": 0, "dtype": "bf16"}}]})",
       {"compare.json", "rows[0].spec.batch", "must be a positive integer (got 0)"}},
      {"compare_ceilings_not_object", "compare.json", R"({"ceilings": 7, "rows": []})", {"compare.json", "ceilings"}},
      {"compare_trace_path_fifo", "compare.json", R"({"rows": [{"variant": "naive", "trace_path": "fifo"}]})",
       {"compare.json", "rows[0].trace_path", "not a regular file"}},
  };
}

class BadReportTest : public ::testing::TestWithParam<BadReport> {};

TEST_P(BadReportTest, OneLineNamingFileAndFieldNoOutput) {
  const BadReport& c = GetParam();
  const std::string dir = make_temp_dir();
  std::ofstream(dir + "/" + c.file) << c.content;
  ASSERT_EQ(mkfifo((dir + "/fifo").c_str(), 0600), 0);  // a trace_path naming it must not hang
  CliResult r = run_cli({"report", dir}, 30);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  for (const std::string& text : c.expected) EXPECT_NE(r.err.find(text), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("json.exception"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("--dtype"), std::string::npos) << "no --dtype flag was given: " << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_FALSE(fs::exists(dir + "/report.html"));
  fs::remove_all(dir);
  fs::remove_all(r.work_dir);
}

INSTANTIATE_TEST_SUITE_P(Cli, BadReportTest, ::testing::ValuesIn(bad_reports()),
                         [](const ::testing::TestParamInfo<BadReport>& info) { return info.param.label; });

TEST(ReportOut, ADirectoryIsRefusedBeforeDrawing) {
  const std::string dir = make_temp_dir();
  std::ofstream(dir + "/sweep.json") << kEmptySweep;
  fs::create_directory(dir + "/html");
  CliResult r = run_cli({"report", dir, "--out", dir + "/html"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("--out"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_TRUE(fs::is_empty(dir + "/html"));
  fs::remove_all(dir);
  fs::remove_all(r.work_dir);
}

TEST(ReportOut, ItsOwnInputIsRefusedAndKept) {
  const std::string dir = make_temp_dir();
  std::ofstream(dir + "/sweep.json") << kEmptySweep;
  for (const std::string& out : {dir + "/sweep.json", dir + "/./sweep.json"}) {
    CliResult r = run_cli({"report", dir, "--out", out});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("an input of this report"), std::string::npos) << r.err;
    EXPECT_EQ(read_whole_file(dir + "/sweep.json"), kEmptySweep);
    fs::remove_all(r.work_dir);
  }
  fs::remove_all(dir);
}

// Issue 17, item 14: any legal file name works, however long: the temporary beside it is named by a hash
// when ".NAME.tmp.PID.N" would pass NAME_MAX (255 bytes).
TEST(ReportOut, A245ByteNameIsWritten) {
  const std::string dir = make_temp_dir();
  std::ofstream(dir + "/sweep.json") << kEmptySweep;
  const std::string name = std::string(240, 'r') + ".html";
  ASSERT_EQ(name.size(), 245u);
  CliResult r = run_cli({"report", dir, "--out", dir + "/" + name});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_regular_file(dir + "/" + name));
  EXPECT_NE(read_whole_file(dir + "/" + name).find("<!DOCTYPE html>"), std::string::npos);
  for (const auto& entry : fs::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << entry.path();
  }
  fs::remove_all(dir);
  fs::remove_all(r.work_dir);
}

}  // namespace
