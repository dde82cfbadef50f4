// The reader against PyTorch's own traces: every event, flow and metadata entry that an
// independent JSON parser (nlohmann) sees is in the model, with exact ns timestamps.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "trace/reader.h"
#include "trace/validate.h"
#include "trace_test_util.h"

namespace attnprof::trace {
namespace {

using nlohmann::json;

class AnchorTrace : public ::testing::TestWithParam<std::string> {};

TEST_P(AnchorTrace, ModelHoldsWhatAnIndependentParserSees) {
  std::string path = testing::anchor_trace(GetParam());
  json doc = json::parse(testing::gunzip_file(path));
  Trace t = read_trace_file(path);
  std::size_t x = 0, i = 0, s = 0, f = 0, m = 0;
  for (const auto& e : doc["traceEvents"]) {
    std::string ph = e["ph"];
    x += ph == "X";
    i += ph == "i";
    s += ph == "s";
    f += ph == "f";
    m += ph == "M";
  }
  EXPECT_EQ(t.events.size(), x + i);
  EXPECT_EQ(t.metadata.size(), m);
  std::size_t starts = 0, ends = 0;
  for (const Flow& fl : t.flows) {
    starts += fl.has_start;
    ends += fl.has_end;
  }
  EXPECT_EQ(starts, s);
  EXPECT_EQ(ends, f);
  EXPECT_EQ(t.base_time_ns, doc["baseTimeNanoseconds"].get<std::int64_t>());
  EXPECT_EQ(t.trace_name, doc["traceName"].get<std::string>());
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].num_sms, 132);
  EXPECT_EQ(t.devices[0].shared_per_block_optin, 232448);
  EXPECT_EQ(t.devices[0].name, "NVIDIA H200");
  // The unmodelled top-level keys are kept as written.
  bool driver = false;
  for (const RawArg& raw : t.other_top_level) driver = driver || (raw.key == "cuda_driver_version" && raw.json == "13000");
  EXPECT_TRUE(driver);
  // Event by event (X and i keep their file order).
  std::size_t k = 0;
  for (const auto& e : doc["traceEvents"]) {
    std::string ph = e["ph"];
    if (ph != "X" && ph != "i") continue;
    const Event& ev = t.events[k++];
    EXPECT_EQ(ev.name, e["name"].get<std::string>());
    // Kineto's ts text has exactly three decimals: the ns value is the digits without the point.
    std::string ts_text = e["ts"].dump();
    if (ts_text.find('.') != std::string::npos && ts_text.size() - ts_text.find('.') == 4) {
      ts_text.erase(ts_text.find('.'), 1);
      EXPECT_EQ(ev.ts_ns, std::stoll(ts_text)) << ev.name;
    }
    if (e.contains("args") && e["args"].contains("correlation"))
      EXPECT_EQ(ev.correlation, e["args"]["correlation"].get<std::int64_t>());
    if (e.value("cat", "") == "kernel") {
      ASSERT_TRUE(ev.launch.has_value()) << ev.name;
      EXPECT_EQ(ev.launch->grid[0], e["args"]["grid"][0].get<std::int64_t>());
      EXPECT_EQ(ev.launch->block[0], e["args"]["block"][0].get<std::int64_t>());
      EXPECT_EQ(ev.launch->registers_per_thread, e["args"]["registers per thread"].get<std::int64_t>());
      EXPECT_DOUBLE_EQ(*ev.launch->blocks_per_sm, e["args"]["blocks per SM"].get<double>());
      EXPECT_EQ(ev.stream, e["args"]["stream"].get<std::int64_t>());
    }
    if (e.value("cat", "") == "gpu_memcpy") EXPECT_EQ(ev.bytes, e["args"]["bytes"].get<std::int64_t>());
  }
  // PyTorch's traces nest properly on every track; some of their flows are unpaired.
  ValidateOptions relaxed;
  relaxed.require_paired_flows = false;
  auto problems = validate(t, relaxed);
  EXPECT_TRUE(problems.empty()) << problems.front();
}

INSTANTIATE_TEST_SUITE_P(PyTorch, AnchorTrace, ::testing::Values("naive", "math", "flash"));

TEST(Reader, ReadsTheArrayFormAndPlainJson) {
  std::string text = R"([{"ph": "X", "name": "a", "pid": 1, "tid": 2, "ts": 1.5, "dur": 2, "cat": "cpu_op"},
                         {"ph": "B", "name": "ignored", "pid": 1, "tid": 2, "ts": 3}])";
  Trace t = read_trace_bytes("mem", text.data(), text.size());
  ASSERT_EQ(t.events.size(), 1u);
  EXPECT_EQ(t.events[0].ts_ns, 1500);
  EXPECT_EQ(t.events[0].dur_ns, 2000);
  EXPECT_EQ(t.events[0].pid, "1");
  EXPECT_EQ(t.events[0].category, Category::cpu_op);
}

TEST(Reader, SaysWhetherDistributedInfoHasARank) {
  std::string with = R"({"distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 4}, "traceEvents": []})";
  Trace t = read_trace_bytes("mem", with.data(), with.size());
  EXPECT_TRUE(t.rank_recorded);
  EXPECT_EQ(t.rank, 3);
  EXPECT_EQ(t.world_size, 4);
  for (std::string text : {std::string(R"({"traceEvents": []})"),
                           std::string(R"({"distributedInfo": {"world_size": 4}, "traceEvents": []})"),
                           std::string(R"({"distributedInfo": {"rank": "3"}, "traceEvents": []})")}) {
    Trace u = read_trace_bytes("mem", text.data(), text.size());
    EXPECT_FALSE(u.rank_recorded) << text;
    EXPECT_EQ(u.rank, 0) << text;
  }
}

TEST(Reader, DecodesEscapesAndSurrogatePairs) {
  std::string text = R"({"traceEvents": [{"ph": "X", "name": "a\"b\\c\u0001\ud83d\ude00\u00b5", "pid": "p", "tid": "t", "ts": 0, "dur": 0}]})";
  Trace t = read_trace_bytes("mem", text.data(), text.size());
  ASSERT_EQ(t.events.size(), 1u);
  EXPECT_EQ(t.events[0].name, "a\"b\\c\x01\xF0\x9F\x98\x80\xC2\xB5");
}

}  // namespace
}  // namespace attnprof::trace
