#pragma once
// Host <-> device-trace clock mapping, its own component (as Tracy's): CUPTI stamps activity with
// its own ns clock; the profiler's CPU events use profiler::now_ns(). Estimator: take several
// (host_before, cupti, host_after) triples and keep the one with the narrowest host window; its
// midpoint minus the CUPTI reading is the offset, with an uncertainty of half the window. With a
// sample at start and one at stop, the map also corrects a linear drift between the clocks.
#include <cstdint>
#include <functional>
#include <optional>

namespace attnprof::cuda {

struct ClockSample {
  std::int64_t host_ns = 0;    // midpoint of the narrowest window
  std::int64_t device_ns = 0;  // CUPTI's reading inside it
  std::int64_t uncertainty_ns = 0;
};

// Reads `tries` triples from the two clocks and returns the best sample.
ClockSample sample_clocks(const std::function<std::int64_t()>& host_clock,
                          const std::function<std::int64_t()>& device_clock, int tries = 16);

class ClockMap {
 public:
  void set_start(ClockSample sample) { start_ = sample; }
  void set_end(ClockSample sample) { end_ = sample; }
  bool valid() const { return start_.has_value(); }
  // Host-clock time of a CUPTI timestamp: offset at start, plus the drift measured up to the end.
  std::int64_t to_host(std::int64_t device_ns) const;
  double drift_ppm() const;  // (host rate / device rate − 1) · 1e6; 0 with one sample

 private:
  std::optional<ClockSample> start_, end_;
};

}  // namespace attnprof::cuda
