#include "report/steps.h"

#include <algorithm>
#include <unordered_map>

#include "report/named_ranges.h"

namespace attnprof::report {
namespace {

using trace::Category;

struct Window {
  std::int64_t start = 0, end = 0;
  std::int64_t kernels = 0, memcpy = 0, memset = 0;
  std::vector<Interval> kernel_intervals, transfer_intervals;  // transfers: memcpys and memsets

  static Window of(const TimelineEvent& range) {
    Window w;
    w.start = range.ts_ns;
    w.end = range.end_ns();
    return w;
  }
  std::vector<Interval> device_intervals() const {
    std::vector<Interval> all = kernel_intervals;
    all.insert(all.end(), transfer_intervals.begin(), transfer_intervals.end());
    return all;
  }
};

// Windows sorted by start and not overlapping: the one containing `ts`, or -1.
long find_window(const std::vector<Window>& windows, std::int64_t ts) {
  auto it = std::upper_bound(windows.begin(), windows.end(), ts,
                             [](std::int64_t t, const Window& w) { return t < w.start; });
  if (it == windows.begin()) return -1;
  --it;
  return ts <= it->end ? static_cast<long>(it - windows.begin()) : -1;
}

// Counts each window's work. Device work is placed by its launch's start time.
void attribute(const Timeline& timeline, std::vector<Window>& windows, bool device) {
  if (windows.empty()) return;
  std::unordered_map<std::int64_t, std::int64_t> launch_ts;  // correlation -> launch start
  if (device) {
    for (const TimelineEvent& e : timeline.events())
      if ((e.category == Category::cuda_runtime || e.category == Category::cuda_driver) && e.correlation >= 0)
        launch_ts.emplace(e.correlation, e.ts_ns);
  }
  for (const TimelineEvent& e : timeline.events()) {
    long w = -1;
    if (device && is_device_work(e.category)) {
      auto it = launch_ts.find(e.correlation);
      if (it == launch_ts.end()) continue;
      w = find_window(windows, it->second);
    } else if (!device && e.category == Category::cpu_kernel) {
      w = find_window(windows, e.ts_ns);
    } else {
      continue;
    }
    if (w < 0) continue;
    Window& win = windows[static_cast<std::size_t>(w)];
    const Interval interval{e.ts_ns, e.end_ns()};
    switch (e.category) {
      case Category::kernel:
      case Category::cpu_kernel:
        ++win.kernels;
        win.kernel_intervals.push_back(interval);
        break;
      case Category::gpu_memcpy:
        ++win.memcpy;
        win.transfer_intervals.push_back(interval);
        break;
      case Category::gpu_memset:
        ++win.memset;
        win.transfer_intervals.push_back(interval);
        break;
      default: break;
    }
  }
}

template <class Match>
std::vector<const TimelineEvent*> user_ranges(const Timeline& timeline, Match match) {
  std::vector<const TimelineEvent*> out;
  for (const TimelineEvent& e : timeline.events())
    if (e.category == Category::user_annotation && match(timeline.name(e))) out.push_back(&e);
  std::stable_sort(out.begin(), out.end(),
                   [](const TimelineEvent* a, const TimelineEvent* b) { return a->ts_ns < b->ts_ns; });
  return out;
}

}  // namespace

bool has_device_work(const Timeline& timeline) {
  for (const TimelineEvent& e : timeline.events())
    if (is_device_work(e.category)) return true;
  return false;
}

bool has_device_work(const trace::Trace& trace) {
  for (const trace::Event& e : trace.events)
    if (e.phase == 'X' && is_device_work(e.category)) return true;
  return false;
}

std::vector<StepSummary> summarize_steps(const Timeline& timeline) {
  auto steps = user_ranges(timeline, [](const std::string& n) { return n.rfind("ProfilerStep#", 0) == 0; });
  std::vector<Window> windows;
  for (const TimelineEvent* e : steps) windows.push_back(Window::of(*e));
  attribute(timeline, windows, has_device_work(timeline));
  std::vector<StepSummary> out;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Window& w = windows[i];
    std::vector<Interval> device = w.device_intervals();
    const std::int64_t device_ns = union_ns(device);
    out.push_back(StepSummary{timeline.name(*steps[i]), w.start, w.end, w.kernels, w.memcpy, w.memset, device_ns,
                              steps[i]->dur_ns, std::move(device)});
  }
  return out;
}

std::vector<StepSummary> summarize_steps(const trace::Trace& trace) { return summarize_steps(Timeline::of(trace)); }

ForwardSummary summarize_forwards(const Timeline& timeline, const std::string& range_name) {
  return summarize_forwards(timeline, std::vector<std::string>{range_name});
}

ForwardSummary summarize_forwards(const Timeline& timeline, const std::vector<std::string>& range_names) {
  std::vector<const TimelineEvent*> forwards;
  for (const TimelineEvent& e : timeline.events())
    if (is_named_range(e.category, timeline.name(e), range_names)) forwards.push_back(&e);
  std::stable_sort(forwards.begin(), forwards.end(), [](const TimelineEvent* a, const TimelineEvent* b) {
    return a->ts_ns != b->ts_ns ? a->ts_ns < b->ts_ns : a->dur_ns > b->dur_ns;
  });
  // A range that starts inside an earlier one (nested, or overlapping on another thread) is
  // counted with that one: each launch belongs to one range.
  std::vector<const TimelineEvent*> outer;
  for (const TimelineEvent* e : forwards)
    if (outer.empty() || e->ts_ns >= outer.back()->end_ns()) outer.push_back(e);
  forwards.swap(outer);
  ForwardSummary s;
  s.on_device = has_device_work(timeline);
  std::vector<Window> windows;
  for (const TimelineEvent* e : forwards) windows.push_back(Window::of(*e));
  attribute(timeline, windows, s.on_device);
  for (std::size_t i = 0; i < forwards.size(); ++i) {
    Window& w = windows[i];
    s.forwards.push_back(ForwardWork{w.start, w.end, w.kernels, w.memcpy, w.memset, union_ns(w.kernel_intervals),
                                     union_ns(w.device_intervals()), forwards[i]->dur_ns, std::move(w.kernel_intervals),
                                     std::move(w.transfer_intervals)});
  }
  average_forwards(s);
  return s;
}

ForwardWork join_work(const ForwardWork& first, const ForwardWork& second) {
  ForwardWork w;
  w.start_ns = first.start_ns;
  w.end_ns = second.end_ns;
  w.kernels = first.kernels + second.kernels;
  w.memcpy = first.memcpy + second.memcpy;
  w.memset = first.memset + second.memset;
  w.cpu_time_ns = first.cpu_time_ns + second.cpu_time_ns;
  w.kernel_intervals = first.kernel_intervals;
  w.kernel_intervals.insert(w.kernel_intervals.end(), second.kernel_intervals.begin(), second.kernel_intervals.end());
  w.transfer_intervals = first.transfer_intervals;
  w.transfer_intervals.insert(w.transfer_intervals.end(), second.transfer_intervals.begin(),
                              second.transfer_intervals.end());
  std::vector<Interval> device = w.kernel_intervals;
  device.insert(device.end(), w.transfer_intervals.begin(), w.transfer_intervals.end());
  w.kernel_time_ns = union_ns(w.kernel_intervals);
  w.device_time_ns = union_ns(std::move(device));
  return w;
}

void average_forwards(ForwardSummary& s) {
  s.kernels_per_forward = s.memcpy_per_forward = s.memset_per_forward = 0;
  s.kernel_time_per_forward_ns = s.device_time_per_forward_ns = s.cpu_time_per_forward_ns = 0;
  if (s.forwards.empty()) return;
  // Sums first, one division last: 10 forwards of 1 kernel are exactly 1 per forward (ten
  // additions of 1/10 are not).
  for (const ForwardWork& f : s.forwards) {
    s.kernels_per_forward += static_cast<double>(f.kernels);
    s.memcpy_per_forward += static_cast<double>(f.memcpy);
    s.memset_per_forward += static_cast<double>(f.memset);
    s.kernel_time_per_forward_ns += static_cast<double>(f.kernel_time_ns);
    s.device_time_per_forward_ns += static_cast<double>(f.device_time_ns);
    s.cpu_time_per_forward_ns += static_cast<double>(f.cpu_time_ns);
  }
  const double n = static_cast<double>(s.forwards.size());
  s.kernels_per_forward /= n;
  s.memcpy_per_forward /= n;
  s.memset_per_forward /= n;
  s.kernel_time_per_forward_ns /= n;
  s.device_time_per_forward_ns /= n;
  s.cpu_time_per_forward_ns /= n;
}

ForwardSummary summarize_forwards(const trace::Trace& trace, const std::string& range_name) {
  return summarize_forwards(Timeline::of(trace), range_name);
}

}  // namespace attnprof::report
