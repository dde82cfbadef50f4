// The Profiler: torch.profiler's schedule and step() over the thread-local recorder, plus the
// device activity source. Step k counts from 0 at start(), so wait=1, warmup=1, active=3 keeps
// ProfilerStep#2..#4, as torch does. Events are recorded in warmup and active steps; only the
// active steps' events are kept (as Kineto).
#include <attnprof/error.h>
#include <attnprof/profiler.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <ctime>
#include <string>
#include <unordered_set>

#include "profiler/device_activity.h"
#include "profiler/recorder.h"
#include "profiler/schedule.h"
#include "trace/gpu_annotations.h"

namespace attnprof::profiler {
namespace {

std::atomic<bool> g_session_open{false};

struct StepWindow {
  long long number = 0;
  std::int64_t start_ns = 0, end_ns = 0;
  std::int64_t external_id = -1;
};

std::int64_t realtime_minus_monotonic_ns() {
  timespec real{}, mono{};
  clock_gettime(CLOCK_REALTIME, &real);
  clock_gettime(CLOCK_MONOTONIC, &mono);
  return (static_cast<std::int64_t>(real.tv_sec) - mono.tv_sec) * 1000000000 + (real.tv_nsec - mono.tv_nsec);
}

trace::RawArg raw_arg(std::string key, std::string json) { return trace::RawArg{std::move(key), std::move(json)}; }

std::string quoted(std::string_view text) { return "\"" + std::string(text) + "\""; }

}  // namespace

struct Profiler::State {
  Options options;
  bool started = false;
  bool stopped = false;
  long long step = 0;
  std::int64_t step_start_ns = 0;
  std::int64_t step_external_id = -1;
  std::int64_t stop_ns = 0;
  std::int64_t tid = 0;
  std::vector<StepWindow> active_steps;
  std::unique_ptr<DeviceActivitySource> device;
  bool device_running = false;
  trace::Trace trace;
  bool trace_taken = false;

  void enter(StepAction action) {
    bool record = action == StepAction::warmup || action == StepAction::active;
    if (record && device && !device_running) {
      device->start();
      device_running = true;
    }
    step_external_id = record ? detail::next_external_id() : -1;
    detail::g_recording.store(record && options.cpu ? 1 : 0, std::memory_order_relaxed);
  }
  void close_step(std::int64_t t) {
    if (step_action(options.schedule, step) == StepAction::active)
      active_steps.push_back(StepWindow{step, step_start_ns, t, step_external_id});
  }
  void build(std::vector<detail::ThreadEvents> threads, trace::Trace device_trace);
};

Profiler::Profiler(Options options) : state_(std::make_unique<State>()) {
  validate(options.schedule);
  if (!options.cpu && !options.cuda) throw UsageError("profiler: no activity selected (enable CPU or CUDA)");
  state_->options = options;
}

Profiler::~Profiler() {
  if (state_ && state_->started && !state_->stopped) {
    detail::end_session();
    if (state_->device_running) state_->device->stop();
    g_session_open.store(false);
  }
}

void Profiler::start() {
  State& s = *state_;
  if (s.started) throw Error("Profiler::start() called twice");
  if (s.options.cuda) {
    DeviceActivityFactory factory = device_activity_factory();
    if (factory == nullptr)
      throw UsageError("device cuda: this build has no CUDA activity collector (built without CUDA)");
    s.device = factory();
  }
  bool expected = false;
  if (!g_session_open.compare_exchange_strong(expected, true))
    throw Error("another Profiler is already recording in this process");
  s.started = true;
  s.tid = detail::current_thread_id();
  detail::begin_session(s.options.record_shapes, s.options.profile_memory);
  s.step = 0;
  s.step_start_ns = now_ns();
  s.enter(step_action(s.options.schedule, 0));
}

void Profiler::step() {
  State& s = *state_;
  if (!s.started || s.stopped) throw Error("Profiler::step() outside start()/stop()");
  std::int64_t t = now_ns();
  s.close_step(t);
  ++s.step;
  s.step_start_ns = t;
  s.enter(step_action(s.options.schedule, s.step));
}

bool Profiler::finished() const {
  long long total = total_steps(state_->options.schedule);
  return total > 0 && state_->step >= total;
}

void Profiler::stop() {
  State& s = *state_;
  if (!s.started || s.stopped) throw Error("Profiler::stop() without a running profile");
  s.stop_ns = now_ns();
  s.close_step(s.stop_ns);
  std::vector<detail::ThreadEvents> threads = detail::end_session();
  s.stopped = true;
  g_session_open.store(false);
  trace::Trace device_trace;
  if (s.device_running) {
    s.device->stop();
    s.device_running = false;
    s.device->collect(device_trace);
  }
  bool had_device = s.device != nullptr;
  s.build(std::move(threads), std::move(device_trace));
  // Only the merged trace holds both the CPU ranges and the device records they launched.
  if (had_device && s.options.cpu) trace::add_gpu_user_annotations(s.trace);
}

trace::Trace Profiler::take_trace() {
  State& s = *state_;
  if (!s.stopped) throw Error("Profiler::take_trace() before stop()");
  if (s.trace_taken) throw Error("Profiler::take_trace() called twice");
  s.trace_taken = true;
  return std::move(s.trace);
}

void Profiler::State::build(std::vector<detail::ThreadEvents> threads, trace::Trace device_trace) {
  using trace::Category;
  trace.schema_version = 1;
  trace.display_time_unit = "ms";
  trace.base_time_ns = realtime_minus_monotonic_ns();
  trace.rank = 0;
  trace.world_size = 1;
  const std::string pid = std::to_string(static_cast<long long>(::getpid()));

  // Kept windows: runs of consecutive active steps.
  std::vector<std::pair<std::int64_t, std::int64_t>> windows;
  for (const StepWindow& w : active_steps) {
    if (!windows.empty() && windows.back().second == w.start_ns)
      windows.back().second = w.end_ns;
    else
      windows.emplace_back(w.start_ns, w.end_ns);
  }
  auto in_window = [&](std::int64_t ts) {
    for (auto& [a, b] : windows)
      if (ts >= a && ts <= b) return true;
    return false;
  };

  for (const StepWindow& w : options.cpu ? active_steps : std::vector<StepWindow>{}) {
    trace::Event e;
    e.category = Category::user_annotation;
    e.name = "ProfilerStep#" + std::to_string(w.number);
    e.ts_ns = w.start_ns;
    e.dur_ns = w.end_ns - w.start_ns;
    e.pid = pid;
    e.tid = std::to_string(tid);
    e.external_id = w.external_id;
    trace.events.push_back(std::move(e));
  }

  std::vector<std::int64_t> tids;
  for (detail::ThreadEvents& t : threads) {
    bool any = false;
    for (std::size_t i = 0; i < t.records.size(); ++i) {
      const detail::Record& r = t.records[i];
      if (r.end_ns < 0 || !in_window(r.ts_ns)) continue;  // open at stop(), or outside the active steps
      any = true;
      trace::Event e;
      e.category = r.category;
      e.phase = r.phase;
      e.name.assign(r.name, r.name_size);
      e.ts_ns = r.ts_ns;
      e.dur_ns = r.phase == 'X' ? r.end_ns - r.ts_ns : 0;
      e.pid = pid;
      e.tid = std::to_string(t.tid);
      if (r.phase == 'i') {
        e.scope = 't';
        e.bytes = r.bytes;
        e.total_allocated = r.total_allocated;
        e.device = r.device == Device::cpu ? -1 : 0;
        e.other_args.push_back(raw_arg("Addr", std::to_string(r.address)));
        e.other_args.push_back(raw_arg("Device Type", r.device == Device::cpu ? "0" : "1"));
      } else {
        e.external_id = r.external_id;
        if (r.dims_size > 0) {
          e.input_dims.assign(r.dims, r.dims_size);
          e.input_types.assign(r.types, r.types_size);
        }
      }
      trace.events.push_back(std::move(e));
    }
    if (any || t.tid == tid) tids.push_back(t.tid);
  }
  if (std::find(tids.begin(), tids.end(), tid) == tids.end()) tids.push_back(tid);

  // Device activity: keep launches made in the active steps, the device work they launched, and
  // device work whose launch the source did not report when it ran inside the active steps.
  std::unordered_set<std::int64_t> kept_launches, seen_launches;
  std::int64_t first = windows.empty() ? 0 : windows.front().first;
  for (const trace::Event& e : device_trace.events) {
    if (e.category == Category::cuda_runtime || e.category == Category::cuda_driver) {
      if (e.correlation >= 0) seen_launches.insert(e.correlation);
      if (in_window(e.ts_ns) && e.correlation >= 0) kept_launches.insert(e.correlation);
    }
  }
  for (trace::Event& e : device_trace.events) {
    bool keep;
    if (e.category == Category::cuda_runtime || e.category == Category::cuda_driver)
      keep = in_window(e.ts_ns);
    else if (e.correlation >= 0 && seen_launches.count(e.correlation))
      keep = kept_launches.count(e.correlation) > 0;
    else
      keep = !windows.empty() && e.ts_ns >= first && e.ts_ns <= stop_ns;
    if (keep) trace.events.push_back(std::move(e));
  }
  for (trace::Flow& f : device_trace.flows)
    if (kept_launches.count(f.id)) trace.flows.push_back(std::move(f));
  trace.devices = std::move(device_trace.devices);
  trace.dropped_records = device_trace.dropped_records;
  for (auto& raw : device_trace.other_top_level) trace.other_top_level.push_back(std::move(raw));

  // Kineto's process and thread metadata.
  std::int64_t meta_ts = windows.empty() ? stop_ns : windows.front().first;
  auto meta = [&](std::string name, std::string mpid, std::string mtid, trace::RawArg arg) {
    trace::Metadata m;
    m.name = std::move(name);
    m.pid = std::move(mpid);
    m.tid = std::move(mtid);
    m.ts_ns = meta_ts;
    m.args.push_back(std::move(arg));
    trace.metadata.push_back(std::move(m));
  };
  meta("process_name", pid, "0", raw_arg("name", quoted("attnprof")));
  meta("process_labels", pid, "0", raw_arg("labels", quoted("CPU")));
  meta("process_sort_index", pid, "0", raw_arg("sort_index", pid));
  std::sort(tids.begin(), tids.end());
  for (std::int64_t t : tids) {
    meta("thread_name", pid, std::to_string(t), raw_arg("name", quoted("thread " + std::to_string(t) + " (attnprof)")));
    meta("thread_sort_index", pid, std::to_string(t), raw_arg("sort_index", std::to_string(t)));
  }
  for (auto& m : device_trace.metadata) trace.metadata.push_back(std::move(m));

  // Parents before children: by start, then the longer first.
  std::stable_sort(trace.events.begin(), trace.events.end(), [](const trace::Event& a, const trace::Event& b) {
    if (a.ts_ns != b.ts_ns) return a.ts_ns < b.ts_ns;
    return a.dur_ns > b.dur_ns;
  });
}

}  // namespace attnprof::profiler
