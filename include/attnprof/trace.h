#pragma once
// The Trace model: what the profiler records and what the reader parses from any Kineto /
// Chrome trace (PyTorch's or ours). Every report is a pure function of a Trace.
// Times are integer nanoseconds on one clock; they become µs (with ns digits) only in the writer.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace attnprof::trace {

// Kineto's "cat" values. cpu_kernel is ours: the CPU compute of one op (the CPU's "kernel").
enum class Category {
  cpu_op,
  user_annotation,
  cpu_kernel,
  kernel,
  gpu_memcpy,
  gpu_memset,
  cuda_runtime,
  cuda_driver,
  gpu_user_annotation,
  python_function,
  cpu_instant_event,  // "[memory]" allocation events and other instants
  trace_span,         // Kineto's "Trace" span
  other,
};
const char* category_name(Category category);                    // Kineto's spelling
Category parse_category(const std::string& name);                 // unknown -> other

// A JSON value kept as its exact text, so unknown args survive a round trip unchanged.
struct RawArg {
  std::string key;
  std::string json;  // e.g. "12", "\"text\"", "[1, 2]"
};

// The footprint of one kernel launch (from CUPTI or a trace's args).
struct KernelLaunch {
  std::array<std::int64_t, 3> grid{0, 0, 0};
  std::array<std::int64_t, 3> block{0, 0, 0};
  std::int64_t registers_per_thread = -1;  // -1: unknown
  std::int64_t static_shared_bytes = -1;
  std::int64_t dynamic_shared_bytes = -1;
  std::int64_t shared_bytes = -1;           // Kineto's "shared memory" (static + dynamic) when only that is known
  std::optional<double> blocks_per_sm;      // as recorded in the trace
  std::optional<double> warps_per_sm;
  std::optional<double> recorded_occupancy_pct;  // "est. achieved occupancy %" as the trace says
};

struct Event {
  Category category = Category::other;
  std::string name;
  char phase = 'X';           // 'X' complete, 'i' instant
  std::int64_t ts_ns = 0;
  std::int64_t dur_ns = 0;    // 0 for instants
  std::string pid;            // Kineto uses numbers and strings ("Spans"); kept as written
  std::string tid;
  std::int64_t external_id = -1;
  std::int64_t correlation = -1;
  std::int64_t device = -1;
  std::int64_t stream = -1;
  std::optional<KernelLaunch> launch;   // kernels
  std::int64_t bytes = -1;              // memcpy/memset bytes; [memory] event's allocation size (signed)
  std::int64_t total_allocated = -1;    // [memory] running total
  std::string input_dims;               // raw JSON of "Input Dims" when record_shapes
  std::string input_types;              // raw JSON of "Input type"
  std::vector<RawArg> other_args;       // everything else, in the order read or recorded
  std::string raw_category;             // the "cat" as written when category is `other` ("" : none written)
  char scope = 0;                       // 'i' events: "s" as written ('t', 'p', 'g'); 0: none written

  std::int64_t end_ns() const { return ts_ns + dur_ns; }
};

// A flow arrow (Kineto's ac2g: from a runtime/driver launch to its kernel), 's' then 'f'.
struct Flow {
  std::int64_t id = 0;
  std::string category = "ac2g";
  std::string name = "ac2g";
  std::int64_t start_ts_ns = 0;
  std::string start_pid, start_tid;
  std::int64_t end_ts_ns = 0;
  std::string end_pid, end_tid;
  bool has_start = false;
  bool has_end = false;
};

// 'M' metadata events (process_name, thread_name, sort indices, labels).
struct Metadata {
  std::string name;
  std::string pid, tid;
  std::int64_t ts_ns = 0;
  std::vector<RawArg> args;
};

struct DeviceProperties {
  std::int64_t id = 0;
  std::string name;
  std::int64_t total_global_mem = 0;
  std::int64_t compute_major = 0, compute_minor = 0;
  std::int64_t max_threads_per_block = 0, max_threads_per_sm = 0;
  std::int64_t regs_per_block = 0, regs_per_sm = 0;
  std::int64_t warp_size = 32;
  std::int64_t shared_per_block = 0, shared_per_block_optin = 0, shared_per_sm = 0;
  std::int64_t num_sms = 0;
  std::int64_t max_blocks_per_sm = 0;  // 0 when the trace does not say (derive from compute capability)
};

struct Trace {
  std::int64_t schema_version = 1;
  std::string trace_name;
  std::string display_time_unit = "ms";
  std::int64_t base_time_ns = 0;
  std::int64_t rank = 0;
  bool rank_recorded = false;  // the trace's distributedInfo has a rank
  std::int64_t world_size = 1;
  std::vector<DeviceProperties> devices;
  std::vector<RawArg> other_top_level;  // trace_id, cuda_driver_version, ... kept as written
  std::vector<Metadata> metadata;
  std::vector<Event> events;
  std::vector<Flow> flows;
  std::int64_t dropped_records = 0;     // device records CUPTI reported lost
};

}  // namespace attnprof::trace
