#include "report/interval_union.h"

#include <algorithm>

namespace attnprof::report {

std::int64_t union_ns(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end(),
            [](const Interval& a, const Interval& b) { return a.start_ns < b.start_ns; });
  std::int64_t covered = 0;
  bool open = false;
  std::int64_t run_start = 0, run_end = 0;  // the current run of overlapping intervals
  for (const Interval& i : intervals) {
    if (i.end_ns <= i.start_ns) continue;
    if (open && i.start_ns <= run_end) {
      run_end = std::max(run_end, i.end_ns);
      continue;
    }
    if (open) covered += run_end - run_start;
    run_start = i.start_ns;
    run_end = i.end_ns;
    open = true;
  }
  if (open) covered += run_end - run_start;
  return covered;
}

}  // namespace attnprof::report
