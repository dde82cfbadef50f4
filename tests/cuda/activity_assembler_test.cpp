#include <attnprof/error.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "cuda/activity_assembler.h"
#include "trace/gpu_annotations.h"
#include "cuda/fake_records.h"

using namespace attnprof;
using namespace attnprof::cuda;
using trace::Category;

namespace {

ClockMap offset_clock(std::int64_t offset) {
  ClockMap m;
  m.set_start({offset, 0, 0});
  return m;
}

const trace::Event* find(const trace::Trace& t, Category c, const std::string& name) {
  for (const auto& e : t.events)
    if (e.category == c && e.name == name) return &e;
  return nullptr;
}

std::string arg(const trace::Event& e, const std::string& key) {
  for (const auto& a : e.other_args)
    if (a.key == key) return a.json;
  return "";
}

// Two launches (a runtime launch and a cuLaunchKernelEx), a DtoD copy and a memset, inside attn_fwd.
ActivityBatch forward_batch() {
  ActivityBatch b;
  b.apis.push_back(fakes::launch(10, 1000, 1100));
  b.kernels.push_back(fakes::kernel(10, 2000, 3000, "gemm"));
  b.apis.push_back(fakes::launch(11, 1200, 1300, "cuLaunchKernelEx", true));
  b.kernels.push_back(fakes::kernel(11, 3000, 5000, "softmax"));
  b.apis.push_back(fakes::launch(12, 1400, 1500, "cudaMemcpyAsync"));
  b.memcpys.push_back(MemcpyRecord{CopyKind::device_to_device, 1 << 20, 5000, 5500, 12, 0, 1, 7});
  b.apis.push_back(fakes::launch(13, 1600, 1700, "cudaMemsetAsync"));
  b.memsets.push_back(MemsetRecord{4, 5600, 5601, 13, 0, 1, 7});
  b.launches_seen = 2;
  return b;
}

trace::Trace trace_with_annotation(std::int64_t offset) {
  trace::Trace t;
  trace::Event range;
  range.category = Category::user_annotation;
  range.name = "attn_fwd";
  range.ts_ns = offset + 900;
  range.dur_ns = 1000;  // covers every API call above
  range.pid = "515";
  range.tid = "515";
  range.external_id = 42;
  t.events.push_back(range);
  return t;
}

}  // namespace

TEST(ActivityAssembler, DeviceEventsOnTheStreamLaneOnTheHostClock) {
  trace::Trace t;
  AssemblyReport r = assemble_activity(t, forward_batch(), offset_clock(1'000'000), fakes::h200());
  EXPECT_EQ(r.kernels, 2);
  EXPECT_EQ(r.memcpys, 1);
  EXPECT_EQ(r.memsets, 1);
  const trace::Event* k = find(t, Category::kernel, "softmax");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->ts_ns, 1'003'000);
  EXPECT_EQ(k->dur_ns, 2000);
  EXPECT_EQ(k->pid, "0");
  EXPECT_EQ(k->tid, "7");
  EXPECT_EQ(k->correlation, 11);
  const trace::Event* copy = find(t, Category::gpu_memcpy, "Memcpy DtoD (Device -> Device)");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->bytes, 1 << 20);
  EXPECT_EQ(arg(*copy, "memory bandwidth (GB/s)"), "2097.152");  // 1 MiB in 500 ns
  ASSERT_NE(find(t, Category::gpu_memset, "Memset (Device)"), nullptr);
  const trace::Event* driver = find(t, Category::cuda_driver, "cuLaunchKernelEx");
  ASSERT_NE(driver, nullptr);
  EXPECT_EQ(driver->pid, "515");
  EXPECT_EQ(driver->ts_ns, 1'001'200);
}

TEST(ActivityAssembler, OneFlowPerCorrelatedLaunch) {
  trace::Trace t;
  AssemblyReport r = assemble_activity(t, forward_batch(), offset_clock(0), fakes::h200());
  EXPECT_EQ(r.flows, 4);
  ASSERT_EQ(t.flows.size(), 4u);
  auto flow = std::find_if(t.flows.begin(), t.flows.end(), [](const trace::Flow& f) { return f.id == 11; });
  ASSERT_NE(flow, t.flows.end());
  EXPECT_EQ(flow->start_ts_ns, 1200);
  EXPECT_EQ(flow->start_tid, "515");
  EXPECT_EQ(flow->end_ts_ns, 3000);
  EXPECT_EQ(flow->end_pid, "0");
  EXPECT_EQ(flow->end_tid, "7");
  EXPECT_EQ(flow->category, "ac2g");
}

// Kineto reports 0 occupancy for cuLaunchKernelEx launches; the estimate covers every launch API.
TEST(ActivityAssembler, EveryKernelGetsAnOccupancyEstimateWithItsLimiter) {
  trace::Trace t;
  assemble_activity(t, forward_batch(), offset_clock(0), fakes::h200());
  for (const auto& e : t.events) {
    if (e.category != Category::kernel) continue;
    ASSERT_TRUE(e.launch.has_value());
    EXPECT_EQ(e.launch->registers_per_thread, 64);
    ASSERT_TRUE(e.launch->recorded_occupancy_pct.has_value());
    // 64 regs × 128 threads: 8192 per block, 8 blocks; 16 warps of 64 = 25%; the grid (1 block/SM) lowers it to 6.25%.
    EXPECT_DOUBLE_EQ(*e.launch->recorded_occupancy_pct, 6.25);
    EXPECT_NE(arg(e, "occupancy estimate").find("estimated"), std::string::npos);
    EXPECT_EQ(arg(e, "occupancy limiter"), "\"grid\"");
  }
}

TEST(ActivityAssembler, GpuUserAnnotationSpansTheDeviceWorkOfItsLaunches) {
  trace::Trace t = trace_with_annotation(0);
  AssemblyReport r = assemble_activity(t, forward_batch(), offset_clock(0), fakes::h200());
  EXPECT_EQ(r.annotations, 1);
  const trace::Event* a = find(t, Category::gpu_user_annotation, "attn_fwd");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->ts_ns, 2000);
  EXPECT_EQ(a->end_ns(), 5601);
  EXPECT_EQ(a->pid, "0");
  EXPECT_EQ(a->tid, "7");
  EXPECT_EQ(a->external_id, 42);
}

TEST(ActivityAssembler, LaunchesOutsideTheRangeAreNotInIt) {
  trace::Trace t = trace_with_annotation(0);
  t.events[0].dur_ns = 250;  // 900..1150: only the first launch
  assemble_activity(t, forward_batch(), offset_clock(0), fakes::h200());
  const trace::Event* a = find(t, Category::gpu_user_annotation, "attn_fwd");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->ts_ns, 2000);
  EXPECT_EQ(a->end_ns(), 3000);
}

TEST(ActivityAssembler, DroppedRecordsAreAnError) {
  ActivityBatch b = forward_batch();
  b.dropped_records = 3;
  trace::Trace t;
  try {
    assemble_activity(t, b, offset_clock(0), fakes::h200());
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dropped 3"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(t.events.empty());
  EXPECT_TRUE(t.flows.empty());
}

TEST(ActivityAssembler, LaunchWithoutKernelRecordIsAnError) {
  ActivityBatch b = forward_batch();
  b.launches_seen = 3;
  trace::Trace t;
  try {
    assemble_activity(t, b, offset_clock(0), fakes::h200());
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("2 kernel records for 3 launches"), std::string::npos) << e.what();
  }
}

TEST(ActivityAssembler, EmptyCaptureIsAnError) {
  trace::Trace t;
  EXPECT_THROW(assemble_activity(t, ActivityBatch{}, offset_clock(0), fakes::h200()), Error);
}

TEST(ActivityAssembler, MemcpyNamesFollowKineto) {
  EXPECT_EQ(memcpy_event_name(CopyKind::host_to_device), "Memcpy HtoD (Pageable -> Device)");
  EXPECT_EQ(memcpy_event_name(CopyKind::device_to_device), "Memcpy DtoD (Device -> Device)");
}

// The profiler merges CPU and device events after collect(): the annotation is derived on the merged trace.
TEST(ActivityAssembler, AnnotationsOnAMergedTrace) {
  trace::Trace device;
  assemble_activity(device, forward_batch(), offset_clock(0), fakes::h200());
  EXPECT_EQ(find(device, Category::gpu_user_annotation, "attn_fwd"), nullptr);  // no CPU ranges yet
  trace::Trace merged = trace_with_annotation(0);
  trace::Event step = merged.events[0];
  step.name = "ProfilerStep#2";
  merged.events.push_back(step);
  for (auto& e : device.events) merged.events.push_back(e);
  EXPECT_EQ(trace::add_gpu_user_annotations(merged), 1);  // attn_fwd, not the step
  const trace::Event* a = find(merged, Category::gpu_user_annotation, "attn_fwd");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->ts_ns, 2000);
  EXPECT_EQ(a->end_ns(), 5601);
}
