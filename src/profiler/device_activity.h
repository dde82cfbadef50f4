#pragma once
// The seam between the profiler and a device's activity collector (the CUPTI one in src/cuda).
// The profiler owns the schedule; the source only collects between start() and stop().
#include <attnprof/trace.h>

#include <memory>
#include <vector>

namespace attnprof::profiler {

class DeviceActivitySource {
 public:
  virtual ~DeviceActivitySource() = default;
  virtual void start() = 0;  // called when the first warmup/active step begins
  virtual void stop() = 0;   // called at Profiler::stop(); flushes every buffer
  // Appends the device events (kernel, gpu_memcpy, gpu_memset, cuda_runtime, cuda_driver,
  // gpu_user_annotation), ac2g flows and device properties to `trace`, timestamps on now_ns()'s
  // clock. Throws Error when the capture is incomplete (dropped records, launches without a
  // kernel record, or nothing captured although launches were seen): never a quiet success.
  virtual void collect(trace::Trace& trace) = 0;
};

using DeviceActivityFactory = std::unique_ptr<DeviceActivitySource> (*)();
// The CUDA backend installs its factory at start-up; Options::cuda uses it.
void install_device_activity_factory(DeviceActivityFactory factory);
DeviceActivityFactory device_activity_factory();  // nullptr when none

}  // namespace attnprof::profiler
