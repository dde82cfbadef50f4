#pragma once
// torch.profiler's key_averages() table, computed from a Trace, with the columns defined in
// docs/tables.md. Unlike PyTorch's table, device time never includes annotation ranges
// (gpu_user_annotation) and each column of "Self" time sums to its total (100%).
#include <attnprof/trace.h>

#include "report/timeline.h"

#include <cstdint>
#include <string>
#include <vector>

namespace attnprof::report {

struct KeyAverage {
  std::string name;            // ProfilerStep#N is grouped as "ProfilerStep*", as torch does
  bool device_row = false;     // a row of device work (kernel/memcpy/memset, or cpu_kernel on a CPU trace)
  std::int64_t calls = 0;
  std::int64_t self_cpu_ns = 0;      // CPU time in these events minus time in their CPU children
  std::int64_t cpu_total_ns = 0;     // CPU time in these events, children included
  std::int64_t self_device_ns = 0;   // device time of the work itself (device rows only)
  std::int64_t device_total_ns = 0;  // device time of the work launched inside these events (CPU rows) or the work itself
};

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
// plus "name". Descending (ascending for name). row_limit < 0: all rows.
// Throws UsageError naming --sort-by / --row-limit for a bad value.
KeyAverages key_averages(const trace::Trace& trace, const std::string& sort_by = "cpu_time_total", int row_limit = -1);
KeyAverages key_averages(const Timeline& timeline, const std::string& sort_by = "cpu_time_total", int row_limit = -1);

// The columns and layout of torch's table (right-aligned, 2-space gaps, totals lines).
std::string render_text(const KeyAverages& table);
// A JSON array of rows (keys in docs/tables.md).
std::string render_json_rows(const KeyAverages& table);

const std::vector<std::string>& sort_keys();

}  // namespace attnprof::report
