// write -> read -> write gives the same bytes, and awkward names survive unchanged.
#include <attnprof/profiler.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "sample_trace.h"
#include "trace/reader.h"
#include "trace/writer.h"
#include "trace_test_util.h"

namespace attnprof::trace {
namespace {

Trace reread(const std::string& text) { return read_trace_bytes("roundtrip", text.data(), text.size()); }

TEST(RoundTrip, HandBuiltTraceIsByteIdenticalAndNamesSurvive) {
  Trace original = testing::sample_trace();
  std::string first = to_json(original);
  Trace back = reread(first);
  std::string second = to_json(back);
  EXPECT_EQ(first, second);
  ASSERT_EQ(back.events.size(), original.events.size());
  for (std::size_t i = 0; i < original.events.size(); ++i) {
    const Event& a = original.events[i];
    const Event& b = back.events[i];
    EXPECT_EQ(b.name, a.name);
    EXPECT_EQ(b.ts_ns, a.ts_ns);
    EXPECT_EQ(b.dur_ns, a.dur_ns);
    EXPECT_EQ(b.category, a.category);
    EXPECT_EQ(b.raw_category, a.raw_category);
    EXPECT_EQ(b.pid, a.pid);
    EXPECT_EQ(b.tid, a.tid);
    EXPECT_EQ(b.external_id, a.external_id);
    EXPECT_EQ(b.correlation, a.correlation);
    EXPECT_EQ(b.bytes, a.bytes);
    EXPECT_EQ(b.total_allocated, a.total_allocated);
    EXPECT_EQ(b.input_dims, a.input_dims);
    EXPECT_EQ(b.input_types, a.input_types);
    EXPECT_EQ(b.scope, a.scope);
    EXPECT_EQ(b.launch.has_value(), a.launch.has_value());
    ASSERT_EQ(b.other_args.size(), a.other_args.size()) << a.name;
    for (std::size_t k = 0; k < a.other_args.size(); ++k) {
      EXPECT_EQ(b.other_args[k].key, a.other_args[k].key);
      EXPECT_EQ(b.other_args[k].json, a.other_args[k].json);
    }
  }
  const KernelLaunch& l = *back.events[3].launch;
  EXPECT_EQ(l.grid, (std::array<std::int64_t, 3>{8, 16, 8}));
  EXPECT_EQ(l.dynamic_shared_bytes, 49152);
  EXPECT_DOUBLE_EQ(*l.blocks_per_sm, 0.969697);
  EXPECT_EQ(back.dropped_records, 2);
  EXPECT_EQ(back.flows.size(), 2u);
  EXPECT_EQ(back.metadata[1].pid, "Spans");
  EXPECT_EQ(back.trace_name, original.trace_name);
}

TEST(RoundTrip, GzipFilesAreByteIdenticalToo) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(testing::temp_dir()) / ("attnprof_rt_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  write_trace_file((dir / "a.json.gz").string(), testing::sample_trace());
  Trace back = read_trace_file((dir / "a.json.gz").string());
  write_trace_file((dir / "b.json.gz").string(), back);
  EXPECT_EQ(testing::read_bytes((dir / "a.json.gz").string()), testing::read_bytes((dir / "b.json.gz").string()));
  fs::remove_all(dir);
}

TEST(RoundTrip, PyTorchTracesAreStableAfterOneRewrite) {
  for (const char* variant : {"naive", "math", "flash"}) {
    Trace t = read_trace_file(testing::anchor_trace(variant));
    std::string first = to_json(t);
    std::string second = to_json(reread(first));
    EXPECT_EQ(first, second) << variant;
  }
}

TEST(RoundTrip, FlowsPairByIdWhateverTheFileOrder) {
  // Kineto writes each 'f' before its 's'; ids may repeat (found by the fuzzer: the pairing used
  // to depend on the file order, so a rewrite re-paired the ends differently).
  std::string text = R"({"traceEvents": [
    {"ph": "f", "id": 7, "pid": 0, "tid": 7, "ts": 5.000, "cat": "ac2g", "name": "ac2g", "bp": "e"},
    {"ph": "s", "id": 7, "pid": 1, "tid": 1, "ts": 1.000, "cat": "ac2g", "name": "ac2g"},
    {"ph": "f", "id": 9, "pid": 0, "tid": 7, "ts": 2.000, "cat": "ac2g", "name": "ac2g", "bp": "e"},
    {"ph": "f", "id": 9, "pid": 0, "tid": 7, "ts": 9.000, "cat": "ac2g", "name": "ac2g", "bp": "e"},
    {"ph": "s", "id": 9, "pid": 1, "tid": 1, "ts": 8.000, "cat": "ac2g", "name": "ac2g"},
    {"ph": "s", "id": 9, "pid": 1, "tid": 1, "ts": 1.500, "cat": "ac2g", "name": "ac2g"},
    {"ph": "s", "id": 9, "pid": 1, "tid": 1, "ts": 0.500, "cat": "ac2g", "name": "ac2g"}]})";
  Trace t = reread(text);
  ASSERT_EQ(t.flows.size(), 4u);
  // In time order of their first end: 9 (0.5 -> 2), 7 (1 -> 5), 9 (1.5 -> 9), 9 (8, no 'f').
  EXPECT_EQ(t.flows[0].id, 9);
  EXPECT_EQ(t.flows[0].start_ts_ns, 500);
  EXPECT_EQ(t.flows[0].end_ts_ns, 2000);
  EXPECT_EQ(t.flows[1].id, 7);
  EXPECT_TRUE(t.flows[1].has_start && t.flows[1].has_end);
  EXPECT_EQ(t.flows[1].end_pid, "0");
  EXPECT_EQ(t.flows[2].end_ts_ns, 9000);
  EXPECT_TRUE(t.flows[3].has_start);
  EXPECT_FALSE(t.flows[3].has_end);
  std::string first = to_json(t);
  EXPECT_EQ(first, to_json(reread(first)));
  std::string crash = testing::read_bytes(testing::source_dir() + "/tests/data/fuzz-regressions/duplicate-flow-ids.json");
  std::string again = to_json(reread(crash));
  EXPECT_EQ(again, to_json(reread(again)));
}

TEST(RoundTrip, OurProfilerTraceWithShapesAndMemory) {
  profiler::Options o;
  o.record_shapes = true;
  o.profile_memory = true;
  o.schedule = profiler::Schedule{0, 0, 1, 1};
  profiler::Profiler prof(o);
  prof.start();
  {
    Tensor q = Tensor::empty({4, 8}, DType::fp16);
    profiler::Range fwd(Category::user_annotation, "attn_fwd");
    profiler::Range op(Category::cpu_op, "aten::softmax<\"x\">", {&q});
    profiler::Range k(Category::cpu_kernel, "softmax_kernel\\n");
  }
  prof.stop();
  Trace t = prof.take_trace();
  std::string first = to_json(t);
  Trace back = reread(first);
  EXPECT_EQ(first, to_json(back));
  bool found = false;
  for (const Event& e : back.events) found = found || (e.name == "aten::softmax<\"x\">" && e.input_dims == "[[4, 8]]");
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace attnprof::trace
