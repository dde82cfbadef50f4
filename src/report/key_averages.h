#pragma once
// torch.profiler's key_averages() table, computed from a Trace, with the columns defined in
// docs/tables.md: by default every column as torch books it (a kernel's time is also the Self CUDA
// of the op that launched it, and gpu_user_annotation ranges get rows of their own); with
// DeviceTime::once each device time is counted once, on its own row, so Self CUDA sums to 100%.
#include <attnprof/trace.h>

#include "report/timeline.h"

#include <cstdint>
#include <string>
#include <vector>

namespace attnprof::report {

struct KeyAverage {
  std::string name;            // ProfilerStep#N is grouped as "ProfilerStep*", as torch does
  bool device_row = false;     // a row of device work (kernel/memcpy/memset, or cpu_kernel on a CPU trace)
  bool annotation_row = false; // a gpu_user_annotation row: the device span of a user range (torch's booking only)
  std::int64_t calls = 0;
  std::int64_t self_cpu_ns = 0;      // CPU time in these events minus time in their CPU children
  std::int64_t cpu_total_ns = 0;     // CPU time in these events, children included
  std::int64_t self_device_ns = 0;   // device rows: the work itself; host rows: the work they launched (torch's booking only)
  std::int64_t device_total_ns = 0;  // device time of the work launched inside these events (host rows) or the work itself
};

// How device time is booked. torch: as torch.profiler's table (the launching op's Self CUDA repeats
// its kernels' time; gpu_user_annotation rows repeat it again). once: only on the work's own row.
enum class DeviceTime { torch, once };

struct KeyAverages {
  // "CUDA" when the trace has kernel/memcpy/memset events, "CPU kernel" when it has only
  // cpu_kernel events, "" when it has neither (the device columns are left out).
  std::string device_label;
  std::vector<KeyAverage> rows;  // sorted, limited
  std::size_t total_rows = 0;    // before row_limit
  std::int64_t self_cpu_total_ns = 0;
  std::int64_t self_device_total_ns = 0;
};

// sort_by: torch's keys (cpu_time_total, self_cpu_time_total, cpu_time, cuda_time_total,
// device_time_total, self_cuda_time_total, self_device_time_total, cuda_time, device_time, count)
// plus "name". Descending (ascending for name); ties keep the order torch meets the rows in (by
// their first event's start). row_limit < 0: all rows.
// Throws UsageError naming sort_by / row_limit for a bad value.
KeyAverages key_averages(const trace::Trace& trace, const std::string& sort_by = "cpu_time_total", int row_limit = -1,
                         DeviceTime device_time = DeviceTime::torch);
KeyAverages key_averages(const Timeline& timeline, const std::string& sort_by = "cpu_time_total", int row_limit = -1,
                         DeviceTime device_time = DeviceTime::torch);

// The columns and layout of torch's table (right-aligned, 2-space gaps, totals lines).
std::string render_text(const KeyAverages& table);
// A JSON array of rows (keys in docs/tables.md).
std::string render_json_rows(const KeyAverages& table);

const std::vector<std::string>& sort_keys();

}  // namespace attnprof::report
