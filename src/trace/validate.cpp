#include "trace/validate.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

namespace attnprof::trace {
namespace {

using Track = std::pair<std::string, std::string>;

// A track's X events sorted by start, with the running maximum of their ends, so "does any
// slice contain ts" is one binary search.
struct SliceIndex {
  std::vector<std::int64_t> starts, max_end;
  bool contains(std::int64_t ts) const {
    auto it = std::upper_bound(starts.begin(), starts.end(), ts);
    if (it == starts.begin()) return false;
    return max_end[static_cast<std::size_t>(it - starts.begin()) - 1] >= ts;
  }
};

}  // namespace

std::vector<std::string> validate(const Trace& trace, const ValidateOptions& options) {
  std::vector<std::string> problems;
  auto add = [&](std::string line) {
    if (problems.size() < options.max_problems) problems.push_back(std::move(line));
  };
  std::map<Track, std::vector<const Event*>> tracks;
  for (const Event& e : trace.events) {
    if (e.phase == 'X') {
      if (e.dur_ns < 0) add(fmt::format("'{}' at {} ns has a negative duration {} ns", e.name, e.ts_ns, e.dur_ns));
      tracks[{e.pid, e.tid}].push_back(&e);
    } else if (e.phase == 'i' || e.phase == 'I') {
      if (e.dur_ns != 0) add(fmt::format("instant '{}' at {} ns has a duration", e.name, e.ts_ns));
    } else {
      add(fmt::format("event '{}' has unsupported phase '{}'", e.name, e.phase));
    }
  }
  for (auto& [track, events] : tracks) {
    std::stable_sort(events.begin(), events.end(), [](const Event* a, const Event* b) {
      if (a->ts_ns != b->ts_ns) return a->ts_ns < b->ts_ns;
      return a->dur_ns > b->dur_ns;
    });
    std::vector<const Event*> open;
    for (const Event* e : events) {
      while (!open.empty() && open.back()->end_ns() <= e->ts_ns) open.pop_back();
      if (!open.empty() && e->end_ns() > open.back()->end_ns()) {
        const Event* p = open.back();
        add(fmt::format("pid {} tid {}: '{}' [{}, {}] ns starts inside '{}' [{}, {}] ns but ends after it", track.first,
                        track.second, e->name, e->ts_ns, e->end_ns(), p->name, p->ts_ns, p->end_ns()));
        continue;
      }
      open.push_back(e);
    }
  }
  std::map<Track, SliceIndex> slices;
  for (const auto& [track, events] : tracks) {
    SliceIndex& index = slices[track];
    for (const Event* e : events) {
      index.starts.push_back(e->ts_ns);
      index.max_end.push_back(index.max_end.empty() ? e->end_ns() : std::max(index.max_end.back(), e->end_ns()));
    }
  }
  std::unordered_map<std::int64_t, int> starts, ends;
  for (const Flow& f : trace.flows) {
    if (f.has_start && ++starts[f.id] == 2) add(fmt::format("flow {} has more than one 's'", f.id));
    if (f.has_end && ++ends[f.id] == 2) add(fmt::format("flow {} has more than one 'f'", f.id));
    if (options.require_paired_flows && (!f.has_start || !f.has_end))
      add(fmt::format("flow {} has no '{}'", f.id, f.has_start ? 'f' : 's'));
    if (f.has_start && f.has_end && f.end_ts_ns < f.start_ts_ns)
      add(fmt::format("flow {} ends at {} ns before it starts at {} ns", f.id, f.end_ts_ns, f.start_ts_ns));
    if (f.has_start) {
      auto it = slices.find({f.start_pid, f.start_tid});
      if (it == slices.end() || !it->second.contains(f.start_ts_ns))
        add(fmt::format("flow {} starts at {} ns on pid {} tid {} where no slice is", f.id, f.start_ts_ns,
                        f.start_pid, f.start_tid));
    }
    if (f.has_end) {
      auto it = slices.find({f.end_pid, f.end_tid});
      if (it == slices.end() || !it->second.contains(f.end_ts_ns))
        add(fmt::format("flow {} ends at {} ns on pid {} tid {} where no slice is", f.id, f.end_ts_ns, f.end_pid,
                        f.end_tid));
    }
  }
  return problems;
}

}  // namespace attnprof::trace
