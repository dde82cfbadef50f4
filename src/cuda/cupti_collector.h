#pragma once
// The CUDA DeviceActivitySource: CUPTI activity between start() and stop(), assembled into the
// trace with flows, annotations and occupancy estimates. When CUPTI cannot be used (taken by
// Nsight or compute-sanitizer, or failing), it says so once on stderr and falls back to CUDA-event
// timing of the whole capture, labelled as such in the trace — never presented as CUPTI data.
#include <attnprof/trace.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "cuda/activity_assembler.h"
#include "cuda/clock_map.h"
#include "cuda/cupti_api.h"
#include "profiler/device_activity.h"

namespace attnprof::cuda {

// Device time of the capture by CUDA events (the fallback's only measurement).
class FallbackTimer {
 public:
  virtual ~FallbackTimer() = default;
  virtual void start() = 0;
  virtual void stop() = 0;
  virtual std::int64_t elapsed_ns() = 0;
};
std::unique_ptr<FallbackTimer> make_event_timer();  // cudaEvents on the backend stream

struct CollectorSeams {
  std::unique_ptr<CuptiApi> api;
  std::unique_ptr<FallbackTimer> fallback;
  trace::DeviceProperties device;
  std::function<void()> synchronize;        // waits for the device to go idle
  std::function<std::int64_t()> host_clock;  // profiler::now_ns
};

class CuptiCollector final : public profiler::DeviceActivitySource {
 public:
  explicit CuptiCollector(CollectorSeams seams);
  void start() override;
  void stop() override;
  void collect(trace::Trace& trace) override;

  const std::optional<std::string>& fallback_reason() const { return fallback_reason_; }
  const AssemblyReport& last_report() const { return report_; }

 private:
  CollectorSeams seams_;
  ClockMap clock_;
  std::optional<std::string> fallback_reason_;
  std::int64_t fallback_start_ns_ = 0;
  AssemblyReport report_;
};

trace::DeviceProperties current_device_properties();
// The factory the profiler uses for Options::cuda.
std::unique_ptr<profiler::DeviceActivitySource> make_cupti_activity_source();

}  // namespace attnprof::cuda
