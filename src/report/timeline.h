#pragma once
// The compact view of a Trace that the reports read: X events of the host and device categories
// they use, with interned names and tracks (about 40 bytes per event, whatever the trace's args).
// Built from a Trace, or event by event while a trace file streams in (attnprof inspect), so a
// 500 MB trace never has to be held as Events.
#include <attnprof/trace.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace attnprof::report {

struct TimelineEvent {
  trace::Category category = trace::Category::other;
  std::uint32_t name = 0;   // Timeline::name()
  std::uint32_t track = 0;  // one per (pid, tid)
  std::uint32_t inputs = 0; // Timeline::inputs(): a cpu_op's recorded inputs (0: none recorded)
  std::int64_t ts_ns = 0;
  std::int64_t dur_ns = 0;
  std::int64_t correlation = -1;
  std::int64_t end_ns() const { return ts_ns + dur_ns; }
};

// What torch.profiler(record_shapes=True) records of an op's inputs, as the raw JSON it wrote:
// "Input Dims", "Input type" and "Concrete Inputs" (the values of scalar arguments).
struct OpInputs {
  std::string dims, types, concrete;
};

class Timeline {
 public:
  static Timeline of(const trace::Trace& trace);
  // Keeps `event` when the reports use it: X events of cpu_op, user_annotation, cpu_kernel,
  // cuda_runtime, cuda_driver, python_function, kernel, gpu_memcpy, gpu_memset, and the device
  // spans of user ranges (gpu_user_annotation, for torch's booking of key_averages). The "Trace"
  // span and instants are left out.
  void add(const trace::Event& event);

  const std::vector<TimelineEvent>& events() const { return events_; }
  const std::string& name(const TimelineEvent& e) const { return names_[e.name]; }
  const std::string& name_at(std::uint32_t id) const { return names_[id]; }
  std::size_t name_count() const { return names_.size(); }
  std::size_t track_count() const { return tracks_.size(); }
  // "pid\x1ftid" of a track, as the trace wrote them.
  const std::string& track_key(std::uint32_t track) const { return track_keys_[track]; }
  const OpInputs& inputs(const TimelineEvent& e) const { return inputs_[e.inputs]; }

 private:
  std::uint32_t intern(std::unordered_map<std::string, std::uint32_t>& ids, const std::string& key);
  std::vector<TimelineEvent> events_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, std::uint32_t> name_ids_;
  std::unordered_map<std::string, std::uint32_t> tracks_;
  std::vector<std::string> track_keys_;
  std::vector<OpInputs> inputs_{OpInputs{}};  // interned: ops of one signature share an entry
  std::unordered_map<std::string, std::uint32_t> input_ids_;
  std::string track_key_;
};

bool is_device_work(trace::Category c);  // kernel, gpu_memcpy, gpu_memset
bool is_host_event(trace::Category c);   // CPU time on its thread

}  // namespace attnprof::report
