// The profiler on a synthetic workload of nested ranges: the schedule keeps exactly the active
// steps, ranges nest per thread, shapes and allocations are recorded in Kineto's spelling.
#include <attnprof/profiler.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "profiler/recorder.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <thread>

#include <attnprof/error.h>

#include "profiler/device_activity.h"
#include "report/steps.h"
#include "trace/writer.h"

#include <nlohmann/json.hpp>
#include "trace/validate.h"

namespace attnprof::profiler {
namespace {

using trace::Category;

// One "forward": attn_fwd { op { cpu_kernel }, op { cpu_kernel } }.
void forward() {
  Range fwd(Category::user_annotation, "attn_fwd");
  for (int op = 0; op < 2; ++op) {
    Range o(Category::cpu_op, op == 0 ? "aten::bmm" : "aten::softmax");
    Range k(Category::cpu_kernel, "gemm_kernel");
    volatile double x = 0;
    for (int i = 0; i < 1000; ++i) x = x + i;
  }
}

std::vector<std::string> step_names(const trace::Trace& t) {
  std::vector<std::string> out;
  for (const auto& e : t.events)
    if (e.name.rfind("ProfilerStep#", 0) == 0) out.push_back(e.name);
  return out;
}

TEST(Profiler, KeepsExactlyTheActiveStepsNumberedAsTorch) {
  Profiler prof(Options{});
  prof.start();
  for (int i = 0; i < 5; ++i) {
    forward();
    prof.step();
  }
  EXPECT_TRUE(prof.finished());
  forward();  // after the schedule: not recorded
  prof.stop();
  trace::Trace t = prof.take_trace();
  EXPECT_EQ(step_names(t), (std::vector<std::string>{"ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"}));
  int fwd = 0, ops = 0, kernels = 0;
  for (const auto& e : t.events) {
    fwd += e.name == "attn_fwd";
    ops += e.category == Category::cpu_op;
    kernels += e.category == Category::cpu_kernel;
  }
  EXPECT_EQ(fwd, 3);
  EXPECT_EQ(ops, 6);
  EXPECT_EQ(kernels, 6);
  EXPECT_TRUE(trace::validate(t).empty()) << trace::validate(t).front();

  auto steps = report::summarize_steps(t);
  ASSERT_EQ(steps.size(), 3u);
  for (const auto& s : steps) {
    EXPECT_EQ(s.kernels, 2) << s.name;  // cpu_kernel events on a CPU-only trace
    EXPECT_EQ(s.memcpy, 0);
    EXPECT_GT(s.device_time_ns, 0);
    EXPECT_LE(s.device_time_ns, s.cpu_time_ns);
  }
  auto fw = report::summarize_forwards(t);
  EXPECT_FALSE(fw.on_device);
  ASSERT_EQ(fw.forwards.size(), 3u);
  EXPECT_DOUBLE_EQ(fw.kernels_per_forward, 2.0);
}

// Acceptance 2: the written file is valid per the Trace Event Format, checked with an
// independent JSON parser, and ProfilerStep#N appears exactly for the active steps.
TEST(Profiler, WrittenTraceFollowsTheTraceEventFormat) {
  Options o;
  o.record_shapes = true;
  o.profile_memory = true;
  o.schedule = Schedule{1, 1, 2, 2};  // two cycles: steps 2, 3 and 6, 7 are active
  Profiler prof(o);
  prof.start();
  while (!prof.finished()) {
    Tensor t = Tensor::empty({4, 4}, DType::fp32);
    {
      Range fwd(Category::user_annotation, "attn_fwd");
      Range op(Category::cpu_op, "aten::mm", {&t, &t});
      Range k(Category::cpu_kernel, "sgemm");
    }
    prof.step();
  }
  prof.stop();
  trace::Trace t = prof.take_trace();
  EXPECT_EQ(step_names(t), (std::vector<std::string>{"ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#6",
                                                      "ProfilerStep#7"}));
  EXPECT_TRUE(trace::validate(t).empty());
  nlohmann::json doc = nlohmann::json::parse(trace::to_json(t));
  ASSERT_TRUE(doc["traceEvents"].is_array());
  int fwd = 0;
  for (const auto& e : doc["traceEvents"]) {
    ASSERT_TRUE(e["ph"].is_string());
    std::string ph = e["ph"];
    ASSERT_TRUE(ph == "X" || ph == "i" || ph == "M" || ph == "s" || ph == "f") << ph;
    EXPECT_TRUE(e["name"].is_string());
    EXPECT_TRUE(e["pid"].is_number_integer());
    EXPECT_TRUE(e["tid"].is_number_integer());
    EXPECT_TRUE(e["ts"].is_number());
    if (ph == "X") {
      EXPECT_TRUE(e["dur"].is_number());
      EXPECT_GE(e["dur"].get<double>(), 0.0);
      EXPECT_TRUE(e["cat"].is_string());
      EXPECT_TRUE(e["args"]["External id"].is_number_integer());
      fwd += e["name"] == "attn_fwd";
    }
    if (ph == "i") {
      EXPECT_EQ(e["s"], "t");
      EXPECT_TRUE(e["args"]["Bytes"].is_number_integer());
      EXPECT_TRUE(e["args"]["Total Allocated"].is_number_integer());
    }
    if (e.value("name", "") == "aten::mm") {
      EXPECT_EQ(e["args"]["Input Dims"], nlohmann::json::parse("[[4, 4], [4, 4]]"));
      EXPECT_EQ(e["args"]["Input type"], nlohmann::json::parse(R"(["float", "float"])"));
    }
  }
  EXPECT_EQ(fwd, 4);  // one attn_fwd per active step
}

TEST(Profiler, EventsNestStrictlyInsideTheirParentsAndCarryExternalIds) {
  Profiler prof(Options{true, false, false, false, Schedule{0, 0, 2, 1}});
  prof.start();
  for (int i = 0; i < 2; ++i) {
    forward();
    prof.step();
  }
  prof.stop();
  trace::Trace t = prof.take_trace();
  std::vector<std::int64_t> ids;
  for (const auto& e : t.events) {
    if (e.category == Category::cpu_op || e.category == Category::cpu_kernel || e.category == Category::user_annotation) {
      EXPECT_GT(e.external_id, 0) << e.name;
      ids.push_back(e.external_id);
    }
  }
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end()) << "External ids repeat";
  // Each cpu_kernel lies inside an op, each op inside attn_fwd, each attn_fwd inside a step.
  auto inside = [&](const trace::Event& child, Category parent_cat) {
    return std::any_of(t.events.begin(), t.events.end(), [&](const trace::Event& p) {
      return p.category == parent_cat && &p != &child && p.ts_ns <= child.ts_ns && child.end_ns() <= p.end_ns();
    });
  };
  for (const auto& e : t.events) {
    if (e.category == Category::cpu_kernel) EXPECT_TRUE(inside(e, Category::cpu_op));
    if (e.category == Category::cpu_op) EXPECT_TRUE(inside(e, Category::user_annotation));
  }
  EXPECT_EQ(step_names(t), (std::vector<std::string>{"ProfilerStep#0", "ProfilerStep#1"}));
}

TEST(Profiler, RecordsShapesTypesAndAllocationsWhenAsked) {
  Options o;
  o.record_shapes = true;
  o.profile_memory = true;
  o.schedule = Schedule{0, 0, 1, 1};
  Profiler prof(o);
  prof.start();
  {
    Tensor q = Tensor::empty({2, 3, 4}, DType::bf16);  // allocation recorded by the allocator
    Tensor k = Tensor::empty({5}, DType::fp32);
    Range r(Category::cpu_op, "aten::mul", {&q, &k, nullptr});
  }
  prof.stop();
  trace::Trace t = prof.take_trace();
  auto op = std::find_if(t.events.begin(), t.events.end(), [](const auto& e) { return e.name == "aten::mul"; });
  ASSERT_NE(op, t.events.end());
  EXPECT_EQ(op->input_dims, "[[2, 3, 4], [5], []]");
  EXPECT_EQ(op->input_types, "[\"c10::BFloat16\", \"float\", \"\"]");
  std::vector<const trace::Event*> mem;
  for (const auto& e : t.events)
    if (e.name == "[memory]") mem.push_back(&e);
  ASSERT_EQ(mem.size(), 4u);  // two allocations, two frees
  EXPECT_EQ(mem[0]->phase, 'i');
  EXPECT_EQ(mem[0]->category, Category::cpu_instant_event);
  EXPECT_GE(mem[0]->bytes, 2 * 3 * 4 * 2);
  EXPECT_LT(mem[3]->bytes, 0);
  EXPECT_EQ(mem[3]->total_allocated + (-mem[3]->bytes), mem[2]->total_allocated);
}

TEST(Profiler, RecordsNothingWhenOffOrWaiting) {
  EXPECT_FALSE(detail::recording());
  Profiler prof(Options{true, false, false, false, Schedule{1, 0, 1, 1}});
  prof.start();
  EXPECT_FALSE(detail::recording());  // step 0 waits
  forward();
  prof.step();
  EXPECT_TRUE(detail::recording());
  prof.step();
  EXPECT_FALSE(detail::recording());
  forward();
  prof.stop();
  EXPECT_FALSE(detail::recording());
  trace::Trace t = prof.take_trace();
  EXPECT_EQ(step_names(t), std::vector<std::string>{"ProfilerStep#1"});
  for (const auto& e : t.events) EXPECT_NE(e.name, "attn_fwd");
}

TEST(Profiler, MergesThreadLocalBuffersOfEveryThread) {
  Profiler prof(Options{true, false, false, false, Schedule{0, 0, 1, 1}});
  prof.start();
  std::thread worker([] { forward(); });
  forward();
  worker.join();
  prof.stop();
  trace::Trace t = prof.take_trace();
  std::map<std::string, int> fwd_per_thread;
  for (const auto& e : t.events)
    if (e.name == "attn_fwd") ++fwd_per_thread[e.tid];
  EXPECT_EQ(fwd_per_thread.size(), 2u);
  EXPECT_TRUE(trace::validate(t).empty());
}

// A stand-in for the CUPTI collector: each launch() is a cudaLaunchKernel on this thread whose
// kernel runs 5 µs later on stream 7, or when the kernel before it ends (a stream runs its kernels
// one after another, so two launches a few ns apart do not give kernels that overlap).
struct FakeDevice {
  static inline std::vector<std::pair<std::int64_t, std::int64_t>> launches;  // (ts, correlation)
  static inline int starts = 0, stops = 0;
  static void launch() { launches.emplace_back(now_ns(), static_cast<std::int64_t>(launches.size()) + 100); }
};

class FakeSource final : public DeviceActivitySource {
 public:
  void start() override { ++FakeDevice::starts; }
  void stop() override { ++FakeDevice::stops; }
  void collect(trace::Trace& t) override {
    std::int64_t stream_free = INT64_MIN;
    for (auto [ts, corr] : FakeDevice::launches) {
      trace::Event rt;
      rt.category = Category::cuda_runtime;
      rt.name = "cudaLaunchKernel";
      rt.ts_ns = ts;
      rt.dur_ns = 1;
      rt.correlation = corr;
      rt.pid = std::to_string(::getpid());
      rt.tid = std::to_string(attnprof::profiler::detail::current_thread_id());  // CUPTI's thread ids are gettid()
      t.events.push_back(rt);
      trace::Event k;
      k.category = Category::kernel;
      k.name = "fake_kernel";
      k.ts_ns = std::max(ts + 5000, stream_free);
      k.dur_ns = 2000;
      stream_free = k.end_ns();
      k.pid = "0";
      k.tid = "7";
      k.correlation = corr;
      t.events.push_back(k);
      trace::Flow f;
      f.id = corr;
      f.has_start = f.has_end = true;
      f.start_ts_ns = ts;
      f.end_ts_ns = k.ts_ns;
      t.flows.push_back(f);
    }
  }
};

TEST(Profiler, KeepsDeviceWorkLaunchedInActiveStepsOnly) {
  FakeDevice::launches.clear();
  install_device_activity_factory([]() -> std::unique_ptr<DeviceActivitySource> { return std::make_unique<FakeSource>(); });
  Options o;
  o.cuda = true;
  Profiler prof(o);
  prof.start();
  for (int step = 0; step < 5; ++step) {
    {
      Range fwd(Category::user_annotation, "attn_fwd");
      FakeDevice::launch();
      if (step >= 2) FakeDevice::launch();  // the warmup step launches one, active steps two
    }
    EXPECT_EQ(FakeDevice::starts, step >= 1 ? 1 : 0) << "the source starts with the first warmup step";
    prof.step();
  }
  prof.stop();
  install_device_activity_factory(nullptr);
  EXPECT_EQ(FakeDevice::stops, 1);
  trace::Trace t = prof.take_trace();
  int kernels = 0, launches = 0;
  for (const auto& e : t.events) {
    kernels += e.category == Category::kernel;
    launches += e.category == Category::cuda_runtime;
  }
  EXPECT_EQ(kernels, 6);
  EXPECT_EQ(launches, 6);
  EXPECT_EQ(t.flows.size(), 6u);
  for (const auto& s : report::summarize_steps(t)) {
    EXPECT_EQ(s.kernels, 2) << s.name;
    EXPECT_EQ(s.device_time_ns, 4000) << s.name;
  }
  auto fw = report::summarize_forwards(t);
  EXPECT_TRUE(fw.on_device);
  EXPECT_DOUBLE_EQ(fw.kernels_per_forward, 2.0);
  EXPECT_DOUBLE_EQ(fw.kernel_time_per_forward_ns, 4000.0);
  // The GPU lane carries attn_fwd too: one gpu_user_annotation per active forward, spanning its
  // two kernels (5 µs after each launch or after the one before, 2 µs long).
  int annotations = 0;
  for (const auto& e : t.events) {
    if (e.category != Category::gpu_user_annotation) continue;
    ++annotations;
    EXPECT_EQ(e.name, "attn_fwd");
    EXPECT_EQ(e.tid, "7");
    EXPECT_GE(e.dur_ns, 2000);
  }
  EXPECT_EQ(annotations, 3);
}

TEST(Profiler, CudaWithoutACollectorIsAUsageError) {
  install_device_activity_factory(nullptr);
  Options o;
  o.cuda = true;
  Profiler prof(o);
  EXPECT_THROW(prof.start(), UsageError);
}

}  // namespace
}  // namespace attnprof::profiler
