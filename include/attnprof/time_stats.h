#pragma once
// The spread of a measured time: the count, median, extremes and 10th/90th percentiles of the
// samples (one per measured forward). Every time attnprof prints is a TimeStats' median, shown
// with its min–max spread.
#include <cstdint>
#include <vector>

namespace attnprof {

struct TimeStats {
  int count = 0;  // samples; 0: nothing was measured (every field below is then 0)
  double median = 0;
  double min = 0;
  double max = 0;
  double p10 = 0;
  double p90 = 0;
  int processes = 1;  // processes the samples were measured in (compare's later rounds: one each)

  // The printed spreads [min, max] meet: neither time is reliably below the other.
  bool overlaps(const TimeStats& other) const { return count > 0 && other.count > 0 && min <= other.max && other.min <= max; }
  TimeStats scaled(double factor) const;  // every value times `factor` (ns → ms); count kept
};

// Percentiles by linear interpolation between the closest ranks (NumPy's default "linear"):
// sorted x[0..n-1], the p-th percentile sits at position p·(n − 1), between x[floor] and
// x[floor + 1] in proportion to the fraction. The median is the 50th percentile, so an even
// count gives the mean of the two middle samples.
TimeStats time_stats(std::vector<double> samples);
double percentile_of_sorted(const std::vector<double>& sorted, double p);  // p in [0, 1]

}  // namespace attnprof
