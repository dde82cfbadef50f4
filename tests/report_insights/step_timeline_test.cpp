#include "report/step_timeline.h"

#include <gtest/gtest.h>

#include "report_insights/scenarios.h"

namespace attnprof::report {
namespace {

// Three steps of naive on the GPU, each a ProfilerStep around one forward.
trace::Trace stepped_naive() {
  testing::TraceBuilder b;
  for (int i = 0; i < 3; ++i) {
    b.host(trace::Category::user_annotation, "ProfilerStep#" + std::to_string(i + 2), 100000 * i - 5, 1010);
    testing::gpu_naive_forward(b, 100000 * i, {});
  }
  // The next step starts exactly where the middle one ends: it must not be drawn in it.
  b.op("aten::empty", 100000 + 1005, 3);
  return b.trace;
}

TEST(StepTimeline, MiddleStepWithItsDeviceWork) {
  StepTimeline t = extract_step_timeline(stepped_naive());
  EXPECT_EQ(t.step, "ProfilerStep#3");
  EXPECT_EQ(t.device_lane, "GPU");
  // memset, bmm, mul, memcpy, masked_fill, softmax, bmm
  ASSERT_EQ(t.device.size(), 7u);
  EXPECT_EQ(t.device[0].kind, "memset");
  EXPECT_EQ(t.device[3].kind, "memcpy");
  EXPECT_EQ(t.device[3].start_ns, 2230 + 5);  // relative to the step's start (ts 99995)
  // The GPU work ends at 3104 ns after the forward's start, past the step's end.
  EXPECT_EQ(t.span_ns, 3020 + 84 + 5);
  EXPECT_EQ(t.cpu.front().name, "ProfilerStep#3");
  EXPECT_EQ(t.cpu.front().depth, 0);
  // step › attn_fwd › masked_fill › clone › copy_ › cudaMemcpyAsync: six rows.
  EXPECT_EQ(t.cpu_depth, 6);
  for (const auto& s : t.cpu) EXPECT_NE(s.name, "aten::empty");
}

TEST(StepTimeline, JsonRoundTripAndSvg) {
  StepTimeline t = extract_step_timeline(stepped_naive(), 300, 3);
  EXPECT_EQ(t.cpu_depth, 3);
  StepTimeline back = step_timeline_from_json(step_timeline_json(t));
  EXPECT_EQ(back.step, t.step);
  EXPECT_EQ(back.cpu.size(), t.cpu.size());
  EXPECT_EQ(back.device.size(), t.device.size());
  EXPECT_EQ(back.span_ns, t.span_ns);
  // The step alone on its page: its span (3109 ns) fills 980 px after the 110 px of lane labels.
  std::string svg = timeline_svg(back, common_time_scale(back.span_ns));
  EXPECT_NE(svg.find("<rect class=\"span\" x=\"110\" y=\"18\" width=\"980.00\""), std::string::npos) << svg.substr(0, 300);
  // The frame of the span, then one rect per slice, each with a tooltip naming it.
  std::size_t rects = 0;
  for (std::size_t at = svg.find("<rect"); at != std::string::npos; at = svg.find("<rect", at + 1)) ++rects;
  EXPECT_EQ(rects, 1 + t.cpu.size() + t.device.size());
  EXPECT_NE(svg.find("<title>Memcpy DtoD (memcpy,"), std::string::npos);
}

TEST(StepTimeline, OneScaleForEveryTimelineOfAPage) {
  // A 12 ms step and a 414 µs one on the page's scale: 12 ms fills 980 px (12244.9 ns per px),
  // so 414 µs is 414000 / 12244.9 = 33.81 px wide; grid lines every 2 ms (6 on 12 ms; 1 ms
  // would give 12, more than 8).
  const TimeScale scale = common_time_scale(12'000'000);
  EXPECT_NEAR(scale.ns_per_px, 12'000'000.0 / 980, 1e-9);
  EXPECT_EQ(scale.tick_ns, 2'000'000);
  StepTimeline longer, shorter;
  longer.span_ns = 12'000'000;
  shorter.span_ns = 414'000;
  shorter.device.push_back({"k", 0, 414'000, 0, "gemm"});
  const std::string long_svg = timeline_svg(longer, scale), short_svg = timeline_svg(shorter, scale);
  EXPECT_NE(long_svg.find("class=\"span\" x=\"110\" y=\"18\" width=\"980.00\""), std::string::npos);
  EXPECT_NE(short_svg.find("class=\"span\" x=\"110\" y=\"18\" width=\"33.81\""), std::string::npos);
  EXPECT_NE(short_svg.find("<rect x=\"110.00\" y=\"50\" width=\"33.81\""), std::string::npos) << short_svg;
  // Grid lines 0, 2, ..., 12 ms on the long one; only 0 on the short one.
  EXPECT_NE(long_svg.find(">12.00 ms</text>"), std::string::npos);
  EXPECT_NE(long_svg.find(">2.00 ms</text>"), std::string::npos);
  EXPECT_EQ(short_svg.find(" ms</text>"), std::string::npos);
  // Small spans: 1-2-5 steps of nanoseconds.
  EXPECT_EQ(common_time_scale(9).tick_ns, 2);
  EXPECT_EQ(common_time_scale(8).tick_ns, 1);
  EXPECT_EQ(common_time_scale(41'000).tick_ns, 10'000);
}

TEST(StepTimeline, KeepsTheLongestSlicesWhenThereAreTooMany) {
  StepTimeline t = extract_step_timeline(stepped_naive(), 3, 6);
  EXPECT_EQ(t.device.size(), 3u);  // masked_fill 367, softmax 284, mul 128
  EXPECT_EQ(t.device[0].kind, "elementwise");
  EXPECT_EQ(t.device[1].kind, "mask");
  EXPECT_EQ(t.device[2].kind, "softmax");
}

}  // namespace
}  // namespace attnprof::report
