#pragma once
// The per-range rows of `inspect --range NAME`: one per name, the work its ranges launched.
#include <string>
#include <vector>

#include "report/timeline.h"

namespace attnprof::report {

// "decode_token: 10 ranges; per range 14.00 kernels, 0.00 memcpy, 0.00 memset, device time
// 45.2 µs, CPU time 1.20 ms", one line per name.
std::string range_rows_text(const Timeline& timeline, const std::vector<std::string>& names);
// [{"name", "count", "kernels_per_range", "memcpy_per_range", "memset_per_range",
//   "device_time_per_range_us", "cpu_time_per_range_us", "device_time_us"}, ...]; a device time is
// the union of the work's intervals (report/steps.h): per range, each range's own, averaged;
// device_time_us, all the ranges' work together.
std::string range_rows_json(const Timeline& timeline, const std::vector<std::string>& names);

}  // namespace attnprof::report
