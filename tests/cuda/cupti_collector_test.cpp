#include <attnprof/error.h>
#include <gtest/gtest.h>

#include "cuda/cupti_collector.h"
#include "cuda/fake_records.h"

using namespace attnprof;
using namespace attnprof::cuda;

namespace {

struct FakeCupti final : CuptiApi {
  std::optional<std::string> refuse;
  ActivityBatch batch;
  std::int64_t device_clock = 0;
  int starts = 0, stops = 0;
  std::optional<std::string> start() override {
    ++starts;
    return refuse;
  }
  void stop() override { ++stops; }
  ActivityBatch take() override { return std::move(batch); }
  std::int64_t timestamp_ns() override { return device_clock; }
};

struct FakeTimer final : FallbackTimer {
  bool started = false, stopped = false;
  void start() override { started = true; }
  void stop() override { stopped = true; }
  std::int64_t elapsed_ns() override { return 123'000; }
};

struct Rig {
  FakeCupti* api;
  FakeTimer* timer;
  std::int64_t host_clock = 0;
  int syncs = 0;
  std::unique_ptr<CuptiCollector> collector;
  Rig() {
    auto a = std::make_unique<FakeCupti>();
    auto t = std::make_unique<FakeTimer>();
    api = a.get();
    timer = t.get();
    CollectorSeams s;
    s.api = std::move(a);
    s.fallback = std::move(t);
    s.device = fakes::h200();
    s.synchronize = [this] { ++syncs; };
    // Host clock = device clock + 10'000 ns, advancing 1 ns per read.
    s.host_clock = [this] { return ++host_clock; };
    collector = std::make_unique<CuptiCollector>(std::move(s));
  }
};

}  // namespace

TEST(CuptiCollector, AssemblesOnTheProfilerClockAfterSynchronizing) {
  Rig rig;
  rig.api->device_clock = -10'000;
  rig.collector->start();
  rig.api->batch.apis.push_back(fakes::launch(1, -9'000, -8'900));
  rig.api->batch.kernels.push_back(fakes::kernel(1, -8'000, -7'000));
  rig.api->batch.launches_seen = 1;
  rig.collector->stop();
  EXPECT_EQ(rig.syncs, 1);
  EXPECT_EQ(rig.api->stops, 1);
  trace::Trace t;
  rig.collector->collect(t);
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].name, "NVIDIA H200");
  const trace::Event* kernel = nullptr;
  for (const auto& e : t.events)
    if (e.category == trace::Category::kernel) kernel = &e;
  ASSERT_NE(kernel, nullptr);
  // Host reads 1,2 around the first device read (-10'000) → offset 10'001 (midpoint 1 of window 1..2).
  EXPECT_NEAR(static_cast<double>(kernel->ts_ns), -8'000 + 10'001, 1.0);
  EXPECT_EQ(rig.collector->last_report().flows, 1);
}

TEST(CuptiCollector, MismatchIsAnErrorNotAQuietSuccess) {
  Rig rig;
  rig.collector->start();
  rig.api->batch.kernels.push_back(fakes::kernel(1, 10, 20));
  rig.api->batch.launches_seen = 2;
  rig.collector->stop();
  trace::Trace t;
  EXPECT_THROW(rig.collector->collect(t), Error);
}

TEST(CuptiCollector, TakenCuptiFallsBackToLabelledEventTiming) {
  Rig rig;
  rig.api->refuse = "CUPTI is taken by another tool (Nsight Systems, Nsight Compute or compute-sanitizer): x";
  rig.collector->start();
  EXPECT_TRUE(rig.timer->started);
  rig.collector->stop();
  EXPECT_TRUE(rig.timer->stopped);
  ASSERT_TRUE(rig.collector->fallback_reason().has_value());
  trace::Trace t;
  rig.collector->collect(t);
  ASSERT_EQ(t.events.size(), 1u);
  EXPECT_EQ(t.events[0].category, trace::Category::gpu_user_annotation);
  EXPECT_EQ(t.events[0].name, "device time by CUDA events (CUPTI unavailable)");
  EXPECT_EQ(t.events[0].dur_ns, 123'000);
  bool labelled = false;
  for (const auto& a : t.events[0].other_args) labelled = labelled || (a.key == "reason" && a.json.find("taken") != std::string::npos);
  EXPECT_TRUE(labelled);
}
