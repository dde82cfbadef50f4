#pragma once
// The profiler: torch.profiler's model in C++. Ranges are RAII; recording is off unless a
// Profiler is in an active (warmup or active) step, and then costs one relaxed atomic load.
#include <attnprof/tensor.h>
#include <attnprof/trace.h>

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string_view>

namespace attnprof::profiler {

struct Schedule {
  int wait = 1;
  int warmup = 1;
  int active = 3;
  int repeat = 1;  // 0: repeat until stop()
};

struct Options {
  bool cpu = true;
  bool cuda = false;  // collect device activity (needs the CUDA backend)
  bool record_shapes = false;
  bool profile_memory = false;
  Schedule schedule;
};

// One monotonic nanosecond clock for every event (host and, after mapping, device).
std::int64_t now_ns();

namespace detail {
// 0 off, 1 recording. Read by every range constructor.
extern std::atomic<int> g_recording;
inline bool recording() { return g_recording.load(std::memory_order_relaxed) != 0; }
void begin_range(trace::Category category, std::string_view name, const Tensor* const* inputs,
                 std::size_t input_count);
void end_range();
// The External id of the innermost range open on the calling thread (-1 when none), so a device
// activity source can tag its runtime/driver launch events as Kineto does.
std::int64_t current_external_id();
}  // namespace detail

// A CPU range: `cpu_op` for ops, `user_annotation` for user ranges, `cpu_kernel` for the CPU
// compute inside an op. The name must outlive the range (a literal or stable string).
class Range {
 public:
  Range(trace::Category category, std::string_view name) : active_(detail::recording()) {
    if (active_) detail::begin_range(category, name, nullptr, 0);
  }
  Range(trace::Category category, std::string_view name, std::initializer_list<const Tensor*> inputs)
      : active_(detail::recording()) {
    if (active_) detail::begin_range(category, name, inputs.begin(), inputs.size());
  }
  ~Range() {
    if (active_) detail::end_range();
  }
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;

 private:
  bool active_;
};

// Allocation events ("[memory]"), called by the allocator when profile_memory is on.
void record_allocation(Device device, const void* ptr, std::int64_t signed_bytes, std::int64_t total_allocated);

class Profiler {
 public:
  explicit Profiler(Options options);
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  void start();
  void step();  // ends the current step, as torch.profiler's prof.step()
  void stop();
  bool finished() const;  // the schedule has run all its active steps
  trace::Trace take_trace();  // after stop()

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace attnprof::profiler
