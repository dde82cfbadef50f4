#include "trace/gpu_annotations.h"

#include <algorithm>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

namespace attnprof::trace {

std::int64_t add_gpu_user_annotations(trace::Trace& trace) {
  struct DeviceSpan {
    std::int64_t ts_ns, end_ns;
    std::string pid, tid;
  };
  std::unordered_map<std::int64_t, DeviceSpan> device_by_correlation;
  std::vector<const Event*> calls;
  std::vector<const Event*> ranges;
  for (const Event& e : trace.events) {
    switch (e.category) {
      case Category::kernel:
      case Category::gpu_memcpy:
      case Category::gpu_memset:
        if (e.correlation >= 0) device_by_correlation.emplace(e.correlation, DeviceSpan{e.ts_ns, e.end_ns(), e.pid, e.tid});
        break;
      case Category::cuda_runtime:
      case Category::cuda_driver: calls.push_back(&e); break;
      case Category::user_annotation:
        if (e.name.rfind("ProfilerStep#", 0) != 0) ranges.push_back(&e);
        break;
      default: break;
    }
  }
  std::vector<Event> annotations;
  for (const Event* range : ranges) {
    std::int64_t first = std::numeric_limits<std::int64_t>::max(), last = std::numeric_limits<std::int64_t>::min();
    std::string pid, tid;
    for (const Event* call : calls) {
      if (call->tid != range->tid || call->ts_ns < range->ts_ns || call->end_ns() > range->end_ns()) continue;
      auto target = device_by_correlation.find(call->correlation);
      if (target == device_by_correlation.end()) continue;
      if (target->second.ts_ns < first) {
        first = target->second.ts_ns;
        pid = target->second.pid;
        tid = target->second.tid;
      }
      last = std::max(last, target->second.end_ns);
    }
    if (last < first) continue;
    Event a;
    a.category = Category::gpu_user_annotation;
    a.name = range->name;
    a.ts_ns = first;
    a.dur_ns = last - first;
    a.pid = pid;
    a.tid = tid;
    a.external_id = range->external_id;
    annotations.push_back(std::move(a));
  }
  for (auto& a : annotations) trace.events.push_back(std::move(a));
  return static_cast<std::int64_t>(annotations.size());
}


}  // namespace attnprof::trace
