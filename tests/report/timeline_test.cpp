#include <gtest/gtest.h>

#include "../trace/trace_test_util.h"
#include "report/key_averages.h"
#include "report/timeline.h"
#include "trace/reader.h"

namespace attnprof::report {
namespace {

using trace::Category;

trace::Event ev(Category c, std::string name, char phase = 'X', std::string tid = "1") {
  trace::Event e;
  e.category = c;
  e.name = std::move(name);
  e.phase = phase;
  e.pid = "1";
  e.tid = std::move(tid);
  e.dur_ns = phase == 'X' ? 10 : 0;
  return e;
}

TEST(Timeline, KeepsOnlyWhatTheReportsReadAndInternsNamesAndTracks) {
  trace::Trace t;
  t.events = {ev(Category::cpu_op, "aten::mm"),
              ev(Category::cpu_op, "aten::mm", 'X', "2"),
              ev(Category::kernel, "sgemm", 'X', "7"),
              ev(Category::gpu_user_annotation, "attn_fwd", 'X', "7"),
              ev(Category::trace_span, "PyTorch Profiler (0)"),
              ev(Category::cpu_instant_event, "[memory]", 'i'),
              ev(Category::other, "overhead")};
  Timeline tl = Timeline::of(t);
  ASSERT_EQ(tl.events().size(), 4u);  // the annotation's device span too: torch's table shows it
  EXPECT_EQ(tl.name_count(), 3u);
  EXPECT_EQ(tl.track_count(), 3u);
  EXPECT_EQ(tl.events()[0].name, tl.events()[1].name);
  EXPECT_NE(tl.events()[0].track, tl.events()[1].track);
  EXPECT_EQ(tl.name(tl.events()[2]), "sgemm");
  EXPECT_EQ(tl.name(tl.events()[3]), "attn_fwd");
  EXPECT_EQ(tl.events()[3].category, Category::gpu_user_annotation);
}

TEST(Timeline, StreamingTheFileGivesTheSameTablesAsReadingItWhole) {
  for (const char* variant : {"naive", "math", "flash"}) {
    std::string path = testing::anchor_trace(variant);
    Timeline streamed;
    trace::Trace header;
    trace::read_trace_file(path, header, [&](trace::Event& e) { streamed.add(e); }, false);
    EXPECT_TRUE(header.flows.empty());
    EXPECT_TRUE(header.events.empty());
    KeyAverages a = key_averages(streamed, "device_time_total", -1);
    KeyAverages b = key_averages(trace::read_trace_file(path), "device_time_total", -1);
    EXPECT_EQ(render_text(a), render_text(b)) << variant;
  }
}

}  // namespace
}  // namespace attnprof::report
