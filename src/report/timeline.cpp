#include "report/timeline.h"

namespace attnprof::report {

using trace::Category;

bool is_device_work(Category c) {
  return c == Category::kernel || c == Category::gpu_memcpy || c == Category::gpu_memset;
}

bool is_host_event(Category c) {
  return c == Category::cpu_op || c == Category::user_annotation || c == Category::cpu_kernel ||
         c == Category::cuda_runtime || c == Category::cuda_driver || c == Category::python_function;
}

Timeline Timeline::of(const trace::Trace& trace) {
  Timeline t;
  t.events_.reserve(trace.events.size());
  for (const trace::Event& e : trace.events) t.add(e);
  return t;
}

std::uint32_t Timeline::intern(std::unordered_map<std::string, std::uint32_t>& ids, const std::string& key) {
  auto it = ids.find(key);
  if (it != ids.end()) return it->second;
  auto id = static_cast<std::uint32_t>(ids.size());
  ids.emplace(key, id);
  if (&ids == &name_ids_) names_.push_back(key);
  if (&ids == &tracks_) track_keys_.push_back(key);
  return id;
}

void Timeline::add(const trace::Event& e) {
  if (e.phase != 'X' ||
      !(is_host_event(e.category) || is_device_work(e.category) || e.category == Category::gpu_user_annotation))
    return;
  TimelineEvent t;
  t.category = e.category;
  t.name = intern(name_ids_, e.name);
  track_key_.assign(e.pid);
  track_key_.push_back('\x1f');
  track_key_.append(e.tid);
  t.track = intern(tracks_, track_key_);
  t.ts_ns = e.ts_ns;
  t.dur_ns = e.dur_ns;
  t.correlation = e.correlation;
  if (e.category == Category::cpu_op && !e.input_dims.empty()) {
    OpInputs in{e.input_dims, e.input_types, {}};
    for (const trace::RawArg& a : e.other_args)
      if (a.key == "Concrete Inputs") in.concrete = a.json;
    track_key_.assign(in.dims);
    track_key_.push_back('\x1f');
    track_key_.append(in.types);
    track_key_.push_back('\x1f');
    track_key_.append(in.concrete);
    auto [it, added] = input_ids_.emplace(track_key_, static_cast<std::uint32_t>(inputs_.size()));
    if (added) inputs_.push_back(std::move(in));
    t.inputs = it->second;
  }
  events_.push_back(t);
}

}  // namespace attnprof::report
