#include <attnprof/time_stats.h>

#include <algorithm>
#include <cmath>

namespace attnprof {

double percentile_of_sorted(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double position = std::clamp(p, 0.0, 1.0) * static_cast<double>(sorted.size() - 1);
  const std::size_t below = static_cast<std::size_t>(std::floor(position));
  if (below + 1 >= sorted.size()) return sorted.back();
  const double fraction = position - static_cast<double>(below);
  return sorted[below] + fraction * (sorted[below + 1] - sorted[below]);
}

TimeStats time_stats(std::vector<double> samples) {
  TimeStats stats;
  if (samples.empty()) return stats;
  std::sort(samples.begin(), samples.end());
  stats.count = static_cast<int>(samples.size());
  stats.min = samples.front();
  stats.max = samples.back();
  stats.median = percentile_of_sorted(samples, 0.5);
  stats.p10 = percentile_of_sorted(samples, 0.1);
  stats.p90 = percentile_of_sorted(samples, 0.9);
  return stats;
}

TimeStats TimeStats::scaled(double factor) const {
  TimeStats s = *this;
  s.median *= factor;
  s.min *= factor;
  s.max *= factor;
  s.p10 *= factor;
  s.p90 *= factor;
  return s;
}

}  // namespace attnprof
