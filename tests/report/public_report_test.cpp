// The public report API (include/attnprof/report.h) on PyTorch's own traces: what a library user
// gets is what `attnprof inspect` prints.
#include <attnprof/error.h>
#include <attnprof/report.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <set>

#include "../trace/trace_test_util.h"
#include "cli/cli_runner.h"

namespace attnprof {
namespace {

std::set<std::string> codes(const trace::Trace& t) {
  std::set<std::string> found;
  for (const TraceInsight& insight : trace_insights(t)) found.insert(insight.code);
  return found;
}

TEST(PublicReport, ReadsPyTorchsTraceAndExplainsIt) {
  trace::Trace naive = read_trace(testing::anchor_trace("naive"));
  EXPECT_TRUE(codes(naive).count("hidden_copy"));
  trace::Trace math = read_trace(testing::anchor_trace("math"));
  std::set<std::string> math_codes = codes(math);
  for (const char* code : {"fp32_gemm_cuda_cores", "mask_rebuilt", "safe_softmax"}) {
    EXPECT_TRUE(math_codes.count(code)) << code;
  }
}

TEST(PublicReport, KeyAveragesTableCarriesTorchsTotals) {
  trace::Trace flash = read_trace(testing::anchor_trace("flash"));
  std::string table = key_averages_table(flash);
  EXPECT_NE(table.find("Self CPU time total: 550.755us"), std::string::npos) << table;
  EXPECT_NE(table.find("Self CUDA time total: 284.894us"), std::string::npos) << table;
}

TEST(PublicReport, WriteThenReadKeepsTheEvents) {
  trace::Trace flash = read_trace(testing::anchor_trace("flash"));
  const std::string dir = testing::make_temp_dir();  // this run's own: a parallel run writes into another
  const std::string path = dir + "/trace.json.gz";
  write_trace(path, flash);
  trace::Trace back = read_trace(path);
  EXPECT_EQ(back.events.size(), flash.events.size());
  EXPECT_EQ(key_averages_table(back), key_averages_table(flash));
  std::filesystem::remove_all(dir);
}

TEST(PublicReport, AMissingFileIsAUsageError) {
  EXPECT_THROW(read_trace("/nonexistent/trace.json"), UsageError);
}

}  // namespace
}  // namespace attnprof
