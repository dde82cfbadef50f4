#pragma once
// Pieces the insight rules' files share (report/insights.cpp, report/kernel_insights.cpp).
#include <algorithm>
#include <string>
#include <vector>

#include "report/forward_work.h"

namespace attnprof::report {

inline std::string join(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? separator : "") + parts[i];
  return out;
}

// Distinct values in first-seen order.
inline void add_unique(std::vector<std::string>& list, const std::string& value) {
  if (!value.empty() && std::find(list.begin(), list.end(), value) == list.end()) list.push_back(value);
}

// The call a rule speaks of: the forward's range or attention call, by name.
inline void add_call(std::vector<std::string>& about, const Forward& forward) { add_unique(about, forward.name); }

// An insight's "about": the calls, then the kernels.
inline std::vector<std::string> about_of(std::vector<std::string> calls, const std::vector<std::string>& kernels) {
  for (const std::string& k : kernels) add_unique(calls, k);
  return calls;
}

// The forwards a per-forward average divides by (1 for a trace without any).
inline double forwards_count(const TraceWork& work) {
  return work.forwards.empty() ? 1.0 : static_cast<double>(work.forwards.size());
}

inline bool is_kernel_with_footprint(const WorkItem& w) {
  return w.event->category == trace::Category::kernel && w.event->launch.has_value();
}

}  // namespace attnprof::report
