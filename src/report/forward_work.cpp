#include "report/forward_work.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "report/interval_union.h"
#include "report/named_ranges.h"

namespace attnprof::report {
namespace {

using trace::Category;

bool is_host_range(const trace::Event& e) {
  if (e.phase != 'X') return false;
  switch (e.category) {
    case Category::cpu_op:
    case Category::user_annotation:
    case Category::cpu_kernel:
    case Category::cuda_runtime:
    case Category::cuda_driver:
    case Category::python_function:
      return true;
    default:
      return false;
  }
}

bool is_device_work(const trace::Event& e) {
  return e.phase == 'X' &&
         (e.category == Category::kernel || e.category == Category::gpu_memcpy || e.category == Category::gpu_memset);
}

// parent[i]: the innermost host range on the same thread that contains event i (-1: none).
// One sweep per thread over events sorted by start, longest first.
std::vector<int> nest_host_ranges(const std::vector<trace::Event>& events) {
  std::vector<int> parent(events.size(), -1);
  std::map<std::pair<std::string, std::string>, std::vector<int>> threads;
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (is_host_range(events[i])) threads[{events[i].pid, events[i].tid}].push_back(static_cast<int>(i));
  }
  for (auto& [key, indices] : threads) {
    std::stable_sort(indices.begin(), indices.end(), [&](int a, int b) {
      if (events[a].ts_ns != events[b].ts_ns) return events[a].ts_ns < events[b].ts_ns;
      return events[a].dur_ns > events[b].dur_ns;
    });
    std::vector<int> stack;
    for (int i : indices) {
      while (!stack.empty() && events[stack.back()].end_ns() <= events[i].ts_ns &&
             !(events[stack.back()].dur_ns == 0 && events[stack.back()].ts_ns == events[i].ts_ns)) {
        stack.pop_back();
      }
      // A child that ends after its parent (seen in real traces) is still nested by its start.
      if (!stack.empty()) parent[i] = stack.back();
      stack.push_back(i);
    }
  }
  return parent;
}

// The named ranges not nested in another of them (a nested one's work is the outer one's); without
// any, the ProfilerStep#N ranges.
std::vector<int> find_forward_ranges(const std::vector<trace::Event>& events, const std::vector<int>& parent,
                                     const std::vector<std::string>& names) {
  std::vector<int> ranges;
  std::vector<char> named(events.size(), 0);
  for (std::size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    if (e.phase == 'X' && is_named_range(e.category, e.name, names)) named[i] = 1;
  }
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (!named[i]) continue;
    bool nested = false;
    for (int p = parent[i]; p >= 0 && !nested; p = parent[p]) nested = named[p] != 0;
    if (!nested) ranges.push_back(static_cast<int>(i));
  }
  if (ranges.empty()) {
    for (std::size_t i = 0; i < events.size(); ++i) {
      const auto& e = events[i];
      if (e.category == Category::user_annotation && e.phase == 'X' && e.name.rfind("ProfilerStep#", 0) == 0) {
        ranges.push_back(static_cast<int>(i));
      }
    }
  }
  std::sort(ranges.begin(), ranges.end(), [&](int a, int b) { return events[a].ts_ns < events[b].ts_ns; });
  return ranges;
}

}  // namespace

std::string WorkItem::label() const {
  if (!ops.empty()) return ops.front()->name;
  return short_kernel_name(event->name);
}

std::string WorkItem::op_path() const {
  std::string path;
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    if (!path.empty()) path += " \u203a ";
    path += (*it)->name;
  }
  return path;
}

bool WorkItem::launched_by(std::string_view op_name) const {
  return std::any_of(ops.begin(), ops.end(), [&](const trace::Event* op) { return op->name == op_name; });
}

int Forward::count(KernelClass kind) const {
  return static_cast<int>(std::count_if(work.begin(), work.end(), [&](const WorkItem& w) { return w.kind == kind; }));
}

int Forward::kernels() const {
  return static_cast<int>(work.size()) - count(KernelClass::memcpy) - count(KernelClass::memset);
}

namespace {
template <typename F>
double average(const std::vector<Forward>& forwards, F value) {
  if (forwards.empty()) return 0;
  double sum = 0;
  for (const Forward& f : forwards) sum += static_cast<double>(value(f));
  return sum / static_cast<double>(forwards.size());
}
}  // namespace

double TraceWork::per_forward(KernelClass kind) const {
  return average(forwards, [&](const Forward& f) { return f.count(kind); });
}
double TraceWork::kernels_per_forward() const {
  return average(forwards, [](const Forward& f) { return f.kernels(); });
}
double TraceWork::cpu_ns_per_forward() const {
  return average(forwards, [](const Forward& f) { return f.cpu_ns; });
}
double TraceWork::busy_ns_per_forward() const {
  return average(forwards, [](const Forward& f) { return f.busy_ns; });
}

const trace::DeviceProperties* find_device(const trace::Trace& trace, std::int64_t id) {
  for (const auto& d : trace.devices) {
    if (d.id == id) return &d;
  }
  return trace.devices.empty() ? nullptr : &trace.devices.front();
}

namespace {

// Places every kernel, memcpy, memset and CPU kernel into `result.forwards` (already made):
// `forward_of(host, item)` walks up from the host event that launched (or ran) the item, fills
// its op chain and says which forward it belongs to (-1: none).
template <class ForwardOf>
void place_work(const trace::Trace& trace, TraceWork& result, ForwardOf forward_of) {
  const auto& events = trace.events;
  std::unordered_map<std::int64_t, int> launch_by_correlation;
  std::unordered_map<std::int64_t, int> op_by_external_id;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    if ((e.category == Category::cuda_runtime || e.category == Category::cuda_driver) && e.correlation >= 0) {
      launch_by_correlation.emplace(e.correlation, static_cast<int>(i));
    }
    if (e.category == Category::cpu_op && e.external_id >= 0) op_by_external_id.emplace(e.external_id, static_cast<int>(i));
  }
  struct Placed {
    int forward;
    std::int64_t order_ns;
    WorkItem item;
  };
  std::vector<Placed> placed;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    const bool device = is_device_work(e);
    if (!device && !(e.category == Category::cpu_kernel && e.phase == 'X')) continue;
    if (device) result.gpu = true;
    WorkItem item;
    item.event = &e;
    item.kind = classify_event(e);
    int forward = -1;
    std::int64_t order = e.ts_ns;
    if (!device) {
      forward = forward_of(static_cast<int>(i), item);
    } else if (auto l = launch_by_correlation.find(e.correlation); e.correlation >= 0 && l != launch_by_correlation.end()) {
      item.launch = &events[l->second];
      order = item.launch->ts_ns;
      forward = forward_of(l->second, item);
    } else if (auto op = op_by_external_id.find(e.external_id); e.external_id >= 0 && op != op_by_external_id.end()) {
      order = events[op->second].ts_ns;
      forward = forward_of(op->second, item);
    }
    if (forward < 0) {
      if (device) ++result.unattributed;
      continue;
    }
    placed.push_back({forward, order, std::move(item)});
  }
  std::stable_sort(placed.begin(), placed.end(), [](const Placed& a, const Placed& b) { return a.order_ns < b.order_ns; });
  std::vector<std::vector<Interval>> intervals(result.forwards.size());
  for (Placed& p : placed) {
    Forward& f = result.forwards[p.forward];
    f.work_ns += p.item.event->dur_ns;
    intervals[static_cast<std::size_t>(p.forward)].push_back(Interval{p.item.event->ts_ns, p.item.event->end_ns()});
    f.work.push_back(std::move(p.item));
  }
  for (std::size_t i = 0; i < intervals.size(); ++i) result.forwards[i].busy_ns = union_ns(std::move(intervals[i]));
}

}  // namespace

TraceWork collect_forwards(const trace::Trace& trace) { return collect_forwards(trace, default_range_names()); }

TraceWork collect_forwards(const trace::Trace& trace, const std::vector<std::string>& range_names) {
  const auto& events = trace.events;
  const std::vector<int> parent = nest_host_ranges(events);
  const std::vector<int> ranges = find_forward_ranges(events, parent, range_names);

  TraceWork result;
  std::unordered_map<int, int> forward_of_range;  // event index -> forward index
  for (int r : ranges) {
    forward_of_range[r] = static_cast<int>(result.forwards.size());
    Forward f;
    f.range = &events[r];
    f.name = events[r].name;
    f.cpu_ns = events[r].dur_ns;
    f.start_ns = events[r].ts_ns;
    f.end_ns = events[r].end_ns();
    result.forwards.push_back(std::move(f));
  }
  const bool whole_trace = ranges.empty();
  if (whole_trace) result.forwards.emplace_back();

  // Walks up from a host event: its cpu_op chain and the forward it lies in.
  place_work(trace, result, [&](int host, WorkItem& item) {
    int forward = whole_trace ? 0 : -1;
    // From the launch's (or CPU kernel's) enclosing range; an op found by External id is its own.
    for (int p = events[host].category == Category::cpu_op ? host : parent[host]; p >= 0; p = parent[p]) {
      if (events[p].category == Category::cpu_op) item.ops.push_back(&events[p]);
      auto it = forward_of_range.find(p);
      if (it != forward_of_range.end()) {
        forward = it->second;
        break;
      }
    }
    return forward;
  });
  if (whole_trace) {
    Forward& f = result.forwards.front();
    std::int64_t begin = INT64_MAX, end = INT64_MIN;
    for (const auto& e : events) {
      if (!is_host_range(e)) continue;
      begin = std::min(begin, e.ts_ns);
      end = std::max(end, e.end_ns());
    }
    f.cpu_ns = end > begin ? end - begin : 0;
  }
  return result;
}

TraceWork collect_windows(const trace::Trace& trace, const std::vector<WorkWindow>& windows) {
  const auto& events = trace.events;
  const std::vector<int> parent = nest_host_ranges(events);
  TraceWork result;
  std::map<std::pair<std::string, std::string>, std::vector<int>> by_thread;  // window indices by start
  for (const WorkWindow& w : windows) {
    by_thread[{w.pid, w.tid}].push_back(static_cast<int>(result.forwards.size()));
    Forward f;
    f.name = w.name;
    f.start_ns = w.start_ns;
    f.end_ns = w.end_ns;
    f.cpu_ns = w.end_ns - w.start_ns;
    result.forwards.push_back(std::move(f));
  }
  for (auto& [thread, list] : by_thread)
    std::sort(list.begin(), list.end(),
              [&](int a, int b) { return result.forwards[a].start_ns < result.forwards[b].start_ns; });
  place_work(trace, result, [&](int host, WorkItem& item) {
    const trace::Event& h = events[host];
    auto it = by_thread.find({h.pid, h.tid});
    if (it == by_thread.end()) return -1;
    const auto& list = it->second;
    auto w = std::upper_bound(list.begin(), list.end(), h.ts_ns,
                              [&](std::int64_t t, int f) { return t < result.forwards[f].start_ns; });
    if (w == list.begin()) return -1;
    const Forward& f = result.forwards[*(w - 1)];
    if (h.ts_ns > f.end_ns) return -1;
    for (int p = host; p >= 0 && events[p].ts_ns >= f.start_ns; p = parent[p])
      if (events[p].category == Category::cpu_op) item.ops.push_back(&events[p]);
    return *(w - 1);
  });
  return result;
}

}  // namespace attnprof::report
