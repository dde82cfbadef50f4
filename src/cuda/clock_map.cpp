#include "cuda/clock_map.h"

#include <attnprof/error.h>

#include <limits>

namespace attnprof::cuda {

ClockSample sample_clocks(const std::function<std::int64_t()>& host_clock,
                          const std::function<std::int64_t()>& device_clock, int tries) {
  ClockSample best;
  std::int64_t best_window = std::numeric_limits<std::int64_t>::max();
  for (int i = 0; i < tries; ++i) {
    std::int64_t before = host_clock();
    std::int64_t device = device_clock();
    std::int64_t after = host_clock();
    if (after < before) throw Error("clock mapping: the host clock went backwards");
    if (after - before < best_window) {
      best_window = after - before;
      best.host_ns = before + (after - before) / 2;
      best.device_ns = device;
      best.uncertainty_ns = (after - before + 1) / 2;
    }
  }
  return best;
}

std::int64_t ClockMap::to_host(std::int64_t device_ns) const {
  if (!start_) throw Error("clock mapping: no clock sample was taken");
  const ClockSample& s = *start_;
  if (!end_ || end_->device_ns == s.device_ns) return device_ns + (s.host_ns - s.device_ns);
  // Linear map through the two samples (exact at both); long double keeps ns over hours.
  long double rate = static_cast<long double>(end_->host_ns - s.host_ns) / static_cast<long double>(end_->device_ns - s.device_ns);
  return s.host_ns + static_cast<std::int64_t>(static_cast<long double>(device_ns - s.device_ns) * rate);
}

double ClockMap::drift_ppm() const {
  if (!start_ || !end_ || end_->device_ns == start_->device_ns) return 0.0;
  long double rate = static_cast<long double>(end_->host_ns - start_->host_ns) /
                     static_cast<long double>(end_->device_ns - start_->device_ns);
  return static_cast<double>((rate - 1.0L) * 1e6L);
}

}  // namespace attnprof::cuda
