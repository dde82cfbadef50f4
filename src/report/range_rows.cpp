#include "report/range_rows.h"

#include <fmt/format.h>

#include "report/insights.h"
#include "report/steps.h"
#include "trace/json_text.h"

namespace attnprof::report {

std::string range_rows_text(const Timeline& timeline, const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) {
    const ForwardSummary s = summarize_forwards(timeline, std::vector<std::string>{name});
    out += fmt::format("{}: {} range{}; per range {:.2f} {}, {:.2f} memcpy, {:.2f} memset, device time {}, CPU time {}\n",
                       name, s.forwards.size(), s.forwards.size() == 1 ? "" : "s", s.kernels_per_forward,
                       s.on_device ? "kernels" : "CPU kernels", s.memcpy_per_forward, s.memset_per_forward,
                       format_duration_ns(s.device_time_per_forward_ns), format_duration_ns(s.cpu_time_per_forward_ns));
  }
  return out;
}

std::string range_rows_json(const Timeline& timeline, const std::vector<std::string>& names) {
  std::string out = "[";
  for (std::size_t i = 0; i < names.size(); ++i) {
    const ForwardSummary s = summarize_forwards(timeline, std::vector<std::string>{names[i]});
    // All the ranges' work as one union: work of one range that overlaps the next's counts once.
    std::vector<Interval> device;
    for (const ForwardWork& f : s.forwards) {
      device.insert(device.end(), f.kernel_intervals.begin(), f.kernel_intervals.end());
      device.insert(device.end(), f.transfer_intervals.begin(), f.transfer_intervals.end());
    }
    const std::int64_t device_ns = union_ns(std::move(device));
    out += i ? ", {\"name\": " : "{\"name\": ";
    trace::append_json_string(out, names[i]);
    out += fmt::format(
        ", \"count\": {}, \"kernels_per_range\": {}, \"memcpy_per_range\": {}, \"memset_per_range\": {}, "
        "\"device_time_per_range_us\": {:.3f}, \"cpu_time_per_range_us\": {:.3f}, \"device_time_us\": ",
        s.forwards.size(), s.kernels_per_forward, s.memcpy_per_forward, s.memset_per_forward,
        s.device_time_per_forward_ns / 1000.0, s.cpu_time_per_forward_ns / 1000.0);
    trace::append_us(out, device_ns);
    out += "}";
  }
  return out + "]";
}

}  // namespace attnprof::report
