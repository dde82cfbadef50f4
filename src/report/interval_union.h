#pragma once
// How long the device was busy: the length of the union of [start, end) intervals.
//
// Device work of one stream can overlap in time: a kernel launched with programmatic dependent
// launch starts while the one before it still runs and waits inside, so its recorded interval
// includes time it only waited; work on several streams overlaps too. Summing durations then counts
// the shared time twice (26-30 µs of a 406 µs flash backward on the H200), so every "device time"
// of a step, an attention call or a range is this union; a summed kernel time (key_averages' "CUDA
// total", a kernel class's share of the work) stays a sum.
#include <cstdint>
#include <vector>

namespace attnprof::report {

struct Interval {
  std::int64_t start_ns = 0, end_ns = 0;  // [start, end); empty when end <= start
};

// The length covered by the intervals, in any order: each instant counted once, touching intervals
// ([0, 5) and [5, 9)) joined, empty ones ignored. Sorts a copy: O(n log n).
std::int64_t union_ns(std::vector<Interval> intervals);

}  // namespace attnprof::report
