#pragma once
// Traces built by hand for the report tests: CPU ranges on one thread, GPU work launched from
// them through runtime/driver calls with correlation ids, or CPU kernels inside the ops.
#include <attnprof/trace.h>

#include <optional>
#include <string>
#include "common/h200.h"

namespace attnprof::testing {

class TraceBuilder {
 public:
  trace::Trace trace;

  trace::Event& host(trace::Category category, const std::string& name, std::int64_t ts, std::int64_t dur) {
    trace::Event e;
    e.category = category;
    e.name = name;
    e.ts_ns = ts;
    e.dur_ns = dur;
    e.pid = "1";
    e.tid = "1";
    if (category == trace::Category::cpu_op) e.external_id = next_external_++;
    trace.events.push_back(e);
    return trace.events.back();
  }
  void op(const std::string& name, std::int64_t ts, std::int64_t dur) { host(trace::Category::cpu_op, name, ts, dur); }
  void forward(std::int64_t ts, std::int64_t dur) { host(trace::Category::user_annotation, "attn_fwd", ts, dur); }
  void cpu_kernel(const std::string& name, std::int64_t ts, std::int64_t dur) {
    host(trace::Category::cpu_kernel, name, ts, dur);
  }

  // A launch call at launch_ts (1 ns long) and its device work at device_ts.
  trace::Event& gpu(trace::Category category, const std::string& name, std::int64_t launch_ts, std::int64_t device_ts,
                    std::int64_t dur, const std::string& api = "cudaLaunchKernel",
                    trace::Category api_category = trace::Category::cuda_runtime) {
    const std::int64_t correlation = next_correlation_++;
    trace::Event& launch = host(api_category, api, launch_ts, 1);
    launch.correlation = correlation;
    trace::Event e;
    e.category = category;
    e.name = name;
    e.ts_ns = device_ts;
    e.dur_ns = dur;
    e.pid = "0";
    e.tid = "7";
    e.device = 0;
    e.stream = 7;
    e.correlation = correlation;
    trace.events.push_back(e);
    return trace.events.back();
  }
  trace::Event& kernel(const std::string& name, std::int64_t launch_ts, std::int64_t device_ts, std::int64_t dur,
                       const std::string& api = "cudaLaunchKernel",
                       trace::Category api_category = trace::Category::cuda_runtime) {
    return gpu(trace::Category::kernel, name, launch_ts, device_ts, dur, api, api_category);
  }

  void add_h200() {
    trace::DeviceProperties d = attnprof::testing::h200_kineto_properties();
    trace.devices.push_back(d);
  }

 private:
  std::int64_t next_correlation_ = 100;
  std::int64_t next_external_ = 1;
};

inline trace::KernelLaunch footprint(std::int64_t regs, std::int64_t threads, std::int64_t shared,
                                     std::optional<double> recorded = std::nullopt) {
  trace::KernelLaunch l;
  l.grid = {8, 8, 16};
  l.block = {threads, 1, 1};
  l.registers_per_thread = regs;
  l.shared_bytes = shared;
  l.recorded_occupancy_pct = recorded;
  return l;
}

}  // namespace attnprof::testing
