// Acceptance 1 (steps): work launched in each active step of PyTorch's own traces.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>

#include "../trace/trace_test_util.h"
#include "report/steps.h"
#include "trace/reader.h"

namespace attnprof::report {
namespace {

using trace::Category;

struct Expected {
  const char* variant;
  std::int64_t kernels, memcpy, memset;
};

class AnchorSteps : public ::testing::TestWithParam<Expected> {};

TEST_P(AnchorSteps, EveryActiveStepLaunchesTheBlogsWork) {
  const Expected& x = GetParam();
  trace::Trace t = trace::read_trace_file(testing::anchor_trace(x.variant));
  auto steps = summarize_steps(t);
  ASSERT_EQ(steps.size(), 3u);
  const char* names[] = {"ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"};
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(steps[i].name, names[i]);
    EXPECT_EQ(steps[i].kernels, x.kernels) << steps[i].name;
    EXPECT_EQ(steps[i].memcpy, x.memcpy) << steps[i].name;
    EXPECT_EQ(steps[i].memset, x.memset) << steps[i].name;
    EXPECT_EQ(steps[i].cpu_time_ns, steps[i].end_ns - steps[i].start_ns);
    EXPECT_GT(steps[i].device_time_ns, 0);
  }
  auto fw = summarize_forwards(t);
  EXPECT_TRUE(fw.on_device);
  ASSERT_EQ(fw.forwards.size(), 3u);
  EXPECT_DOUBLE_EQ(fw.kernels_per_forward, static_cast<double>(x.kernels));
  EXPECT_DOUBLE_EQ(fw.memcpy_per_forward, static_cast<double>(x.memcpy));
  EXPECT_DOUBLE_EQ(fw.memset_per_forward, static_cast<double>(x.memset));
}

INSTANTIATE_TEST_SUITE_P(PyTorch, AnchorSteps,
                         ::testing::Values(Expected{"naive", 5, 1, 1}, Expected{"math", 20, 0, 0},
                                           Expected{"flash", 1, 0, 0}),
                         [](const ::testing::TestParamInfo<Expected>& info) { return std::string(info.param.variant); });

// The same through the command line: `attnprof inspect --format json` on each anchor trace.
TEST_P(AnchorSteps, InspectJsonReportsThemToo) {
  const char* bin = std::getenv("ATTNPROF_BIN");
  if (bin == nullptr || !std::filesystem::exists(bin)) GTEST_SKIP() << "ATTNPROF_BIN not set";
  const Expected& x = GetParam();
  std::string cmd = std::string(bin) + " inspect --format json " + testing::anchor_trace(x.variant);
  FILE* pipe = ::popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  ASSERT_EQ(::pclose(pipe), 0) << out;
  auto doc = nlohmann::json::parse(out);
  ASSERT_EQ(doc["steps"].size(), 3u);
  for (const auto& step : doc["steps"]) {
    EXPECT_EQ(step["kernels"], x.kernels);
    EXPECT_EQ(step["memcpy"], x.memcpy);
    EXPECT_EQ(step["memset"], x.memset);
    EXPECT_GT(step["device_time_us"].get<double>(), 0);
    EXPECT_GT(step["cpu_time_us"].get<double>(), 0);
  }
  EXPECT_GT(doc["totals"]["self_cpu_us"].get<double>(), 0);
  EXPECT_GT(doc["totals"]["self_device_us"].get<double>(), 0);
  EXPECT_FALSE(doc["key_averages"].empty());
}

TEST(Steps, NaiveTraceHasTwoKernelsLaunchedBeforeTheWindowThatNoStepOwns) {
  // Kineto keeps kernels that ran in the window although their launch (in the warmup step) is
  // not in the trace: 17 kernels, but only 3 x 5 belong to a step.
  trace::Trace t = trace::read_trace_file(testing::anchor_trace("naive"));
  int kernels = 0;
  for (const auto& e : t.events) kernels += e.category == Category::kernel;
  EXPECT_EQ(kernels, 17);
  std::int64_t attributed = 0;
  for (const auto& s : summarize_steps(t)) attributed += s.kernels;
  EXPECT_EQ(attributed, 15);
}

trace::Event ev(Category c, std::string name, std::int64_t ts, std::int64_t dur, std::int64_t corr = -1) {
  trace::Event e;
  e.category = c;
  e.name = std::move(name);
  e.ts_ns = ts;
  e.dur_ns = dur;
  e.pid = e.tid = "1";
  e.correlation = corr;
  return e;
}

TEST(Steps, DeviceWorkBelongsToTheStepThatLaunchedItNotTheOneItRanIn) {
  trace::Trace t;
  t.events = {ev(Category::user_annotation, "ProfilerStep#5", 0, 100),
              ev(Category::user_annotation, "ProfilerStep#6", 100, 100),
              ev(Category::cuda_runtime, "cudaLaunchKernel", 90, 5, 1),
              ev(Category::kernel, "k", 150, 40, 1),          // runs in step 6, launched in step 5
              ev(Category::cuda_runtime, "cudaMemsetAsync", 120, 5, 2),
              ev(Category::gpu_memset, "Memset", 300, 1, 2),   // runs after both steps
              ev(Category::gpu_user_annotation, "attn_fwd", 100, 100),
              ev(Category::kernel, "orphan", 110, 10, 99)};  // no launch in the trace
  auto s = summarize_steps(t);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].kernels, 1);
  EXPECT_EQ(s[0].device_time_ns, 40);
  EXPECT_EQ(s[1].kernels, 0);
  EXPECT_EQ(s[1].memset, 1);
  EXPECT_EQ(s[1].device_time_ns, 1);
}

TEST(Steps, OnACpuTraceTheKernelsAreCpuKernelEvents) {
  trace::Trace t;
  t.events = {ev(Category::user_annotation, "ProfilerStep#2", 0, 1000), ev(Category::user_annotation, "attn_fwd", 10, 900),
              ev(Category::cpu_op, "aten::bmm", 20, 300), ev(Category::cpu_kernel, "gemm", 30, 250),
              ev(Category::cpu_op, "aten::softmax", 400, 300), ev(Category::cpu_kernel, "softmax", 410, 200),
              ev(Category::cpu_kernel, "after", 2000, 5)};
  auto s = summarize_steps(t);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].kernels, 2);
  EXPECT_EQ(s[0].device_time_ns, 450);
  EXPECT_EQ(s[0].cpu_time_ns, 1000);
  auto fw = summarize_forwards(t);
  EXPECT_FALSE(fw.on_device);
  ASSERT_EQ(fw.forwards.size(), 1u);
  EXPECT_EQ(fw.forwards[0].kernels, 2);
  EXPECT_EQ(fw.forwards[0].kernel_time_ns, 450);
  EXPECT_EQ(fw.forwards[0].cpu_time_ns, 900);
}

// One step with one attn_fwd range that launches two kernels and a memset; the second kernel
// starts at `second_start` and runs 130 ns, while the first runs [1000, 1400).
trace::Trace two_kernels(std::int64_t second_start) {
  trace::Trace t;
  t.events = {ev(Category::user_annotation, "ProfilerStep#1", 0, 500),
              ev(Category::user_annotation, "attn_fwd", 10, 400),
              ev(Category::cuda_runtime, "cudaLaunchKernel", 20, 5, 1),
              ev(Category::kernel, "first", 1000, 400, 1),
              ev(Category::cuda_runtime, "cudaLaunchKernelExC", 30, 5, 2),
              ev(Category::kernel, "second", second_start, 130, 2),
              ev(Category::cuda_runtime, "cudaMemsetAsync", 40, 5, 3),
              ev(Category::gpu_memset, "Memset", 1600, 10, 3)};
  return t;
}

TEST(Steps, OverlappingKernelsCountTheirSharedTimeOnce) {
  // Programmatic dependent launch: the second kernel starts at 1370, 30 ns before the first ends.
  // Union [1000, 1500) + [1600, 1610) = 510 ns; the sum, 400 + 130 + 10 = 540, would count the 30 ns
  // twice.
  const trace::Trace t = two_kernels(1370);
  auto s = summarize_steps(t);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].kernels, 2);
  EXPECT_EQ(s[0].memset, 1);
  EXPECT_EQ(s[0].device_time_ns, 510);
  auto fw = summarize_forwards(t);
  ASSERT_EQ(fw.forwards.size(), 1u);
  EXPECT_EQ(fw.forwards[0].kernel_time_ns, 500);
  EXPECT_EQ(fw.forwards[0].device_time_ns, 510);
  EXPECT_DOUBLE_EQ(fw.device_time_per_forward_ns, 510.0);
}

TEST(Steps, DisjointKernelsGiveTheSum) {
  // The second kernel at [1450, 1580): nothing shared, so the union is the sum, 400 + 130 + 10.
  const trace::Trace t = two_kernels(1450);
  auto s = summarize_steps(t);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].device_time_ns, 540);
  auto fw = summarize_forwards(t);
  ASSERT_EQ(fw.forwards.size(), 1u);
  EXPECT_EQ(fw.forwards[0].kernel_time_ns, 530);
  EXPECT_EQ(fw.forwards[0].device_time_ns, 540);
}

TEST(Steps, JoinedWorkIsTheUnionOverBothRanges) {
  // A forward's kernel [1000, 1400) and its backward's [1380, 1500), which starts before the
  // forward's ends: 500 ns, not 520; a memset of the backward [1600, 1610) adds 10.
  trace::Trace t;
  t.events = {ev(Category::user_annotation, "attn_fwd", 0, 100), ev(Category::user_annotation, "attn_bwd", 200, 100),
              ev(Category::cuda_runtime, "cudaLaunchKernel", 10, 5, 1), ev(Category::kernel, "fwd", 1000, 400, 1),
              ev(Category::cuda_runtime, "cudaLaunchKernelExC", 210, 5, 2), ev(Category::kernel, "bwd", 1380, 120, 2),
              ev(Category::cuda_runtime, "cudaMemsetAsync", 220, 5, 3), ev(Category::gpu_memset, "Memset", 1600, 10, 3)};
  const ForwardWork f = summarize_forwards(t, "attn_fwd").forwards.at(0);
  const ForwardWork b = summarize_forwards(t, "attn_bwd").forwards.at(0);
  EXPECT_EQ(f.device_time_ns, 400);
  EXPECT_EQ(b.device_time_ns, 130);
  const ForwardWork w = join_work(f, b);
  EXPECT_EQ(w.start_ns, 0);
  EXPECT_EQ(w.end_ns, 300);
  EXPECT_EQ(w.kernels, 2);
  EXPECT_EQ(w.memset, 1);
  EXPECT_EQ(w.kernel_time_ns, 500);
  EXPECT_EQ(w.device_time_ns, 510);
  EXPECT_EQ(w.cpu_time_ns, 200);
}

TEST(Steps, AverageForwardsIsTheMeanOfEachCountAndTime) {
  ForwardSummary s;
  s.kernels_per_forward = 99;  // stale means are replaced
  // kernels 1, 1, 2 → 4/3; memcpy 0, 0, 3 → 1; times 10, 20, 60 ns → 30; cpu 3, 3, 3 → 3.
  s.forwards = {ForwardWork{0, 10, 1, 0, 0, 10, 12, 3}, ForwardWork{20, 30, 1, 0, 1, 20, 21, 3},
                ForwardWork{40, 50, 2, 3, 2, 60, 72, 3}};
  average_forwards(s);
  EXPECT_DOUBLE_EQ(s.kernels_per_forward, 4.0 / 3.0);
  EXPECT_DOUBLE_EQ(s.memcpy_per_forward, 1.0);
  EXPECT_DOUBLE_EQ(s.memset_per_forward, 1.0);
  EXPECT_DOUBLE_EQ(s.kernel_time_per_forward_ns, 30.0);
  EXPECT_DOUBLE_EQ(s.device_time_per_forward_ns, 35.0);
  EXPECT_DOUBLE_EQ(s.cpu_time_per_forward_ns, 3.0);
  // Ten forwards of one kernel are exactly one per forward (sums first, one division).
  s.forwards.assign(10, ForwardWork{0, 1, 1, 0, 0, 1, 1, 1});
  average_forwards(s);
  EXPECT_EQ(s.kernels_per_forward, 1.0);
  s.forwards.clear();
  average_forwards(s);
  EXPECT_EQ(s.kernels_per_forward, 0.0);
  EXPECT_EQ(s.device_time_per_forward_ns, 0.0);
}

}  // namespace
}  // namespace attnprof::report
