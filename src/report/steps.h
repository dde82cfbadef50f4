#pragma once
// Work per profiler step and per forward, from any Kineto trace (PyTorch's or ours).
// A device event (kernel, gpu_memcpy, gpu_memset) belongs to the window in which the runtime or
// driver call that launched it ran (matched by correlation id); device work whose launch is not in
// the trace (launched before the window opened) belongs to no window. A CPU event belongs to the
// window that contains its start. On a CPU-only trace (no device events at all) the "kernels" are
// the `cpu_kernel` events, so work per forward means the same on both devices.
//
// A device time here is how long the device was busy with a window's work: the union of the work's
// [start, end) intervals (report/interval_union.h), not the sum of their durations, which counts
// twice the time that overlapping kernels share.
#include <attnprof/trace.h>

#include "report/interval_union.h"
#include "report/timeline.h"

#include <cstdint>
#include <string>
#include <vector>

namespace attnprof::report {

struct StepSummary {
  std::string name;               // "ProfilerStep#2"
  std::int64_t start_ns = 0, end_ns = 0;
  std::int64_t kernels = 0, memcpy = 0, memset = 0;
  std::int64_t device_time_ns = 0;  // union of its kernels', memcpys' and memsets' intervals (cpu_kernel on the CPU)
  std::int64_t cpu_time_ns = 0;     // the step's wall time on the thread that called step()
  std::vector<Interval> device_intervals;  // what device_time_ns covers, one per event, in trace order
};

// One entry per ProfilerStep#N range, in time order.
std::vector<StepSummary> summarize_steps(const trace::Trace& trace);
std::vector<StepSummary> summarize_steps(const Timeline& timeline);

// One `attn_fwd` user range (the CPU one, not its gpu_user_annotation mirror).
struct ForwardWork {
  std::int64_t start_ns = 0, end_ns = 0;
  std::int64_t kernels = 0, memcpy = 0, memset = 0;
  std::int64_t kernel_time_ns = 0;  // union of its kernels' intervals (cpu_kernel on the CPU)
  std::int64_t device_time_ns = 0;  // union of its kernels', memcpys' and memsets' intervals
  std::int64_t cpu_time_ns = 0;     // the attn_fwd range's duration
  // What the two times cover, one per event, in trace order: memcpys and memsets are the transfers.
  std::vector<Interval> kernel_intervals, transfer_intervals;
};

// Two ranges' work as one (a training step: a forward and the backward after it): counts and CPU
// times summed, the device times the union of both ranges' intervals, so work of the second range
// that overlaps the first's is counted once.
ForwardWork join_work(const ForwardWork& first, const ForwardWork& second);

struct ForwardSummary {
  bool on_device = false;  // the trace has device events (else the kernels are cpu_kernel events)
  std::vector<ForwardWork> forwards;
  // Means over `forwards` (0 when there are none): of each forward's own union, as above.
  double kernels_per_forward = 0, memcpy_per_forward = 0, memset_per_forward = 0;
  double kernel_time_per_forward_ns = 0, device_time_per_forward_ns = 0, cpu_time_per_forward_ns = 0;
};

ForwardSummary summarize_forwards(const trace::Trace& trace, const std::string& range_name = "attn_fwd");
ForwardSummary summarize_forwards(const Timeline& timeline, const std::string& range_name = "attn_fwd");
// Over every range of these names (report/named_ranges.h: user ranges and modules); a range that
// starts inside an earlier one is counted with it.
ForwardSummary summarize_forwards(const Timeline& timeline, const std::vector<std::string>& range_names);

// Sets the means of `summary` from its `forwards` (each 0 when there are none): what
// summarize_forwards does last, and what a summary built from other ranges (a training step's
// forward and backward together) needs.
void average_forwards(ForwardSummary& summary);

// True when the trace holds kernel, gpu_memcpy or gpu_memset events.
bool has_device_work(const trace::Trace& trace);
bool has_device_work(const Timeline& timeline);

}  // namespace attnprof::report
