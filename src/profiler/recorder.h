#pragma once
// Thread-local event buffers behind Range and record_allocation. A recording session runs from
// Profiler::start() to Profiler::stop(); each thread appends to its own buffer without locks, and
// stop() takes every buffer's records. Hazard: stop() must not race with ranges still being
// recorded on other threads (as in torch.profiler, stop once the workload has returned).
#include <attnprof/profiler.h>

#include <cstdint>
#include <string>
#include <vector>

namespace attnprof::profiler::detail {

struct Record {
  trace::Category category = trace::Category::other;
  char phase = 'X';             // 'X' range, 'i' allocation instant
  std::int64_t ts_ns = 0;
  std::int64_t end_ns = -1;     // -1 while the range is open
  std::int64_t external_id = -1;
  std::uint32_t name_offset = 0, name_size = 0;    // into ThreadEvents::arena
  std::uint32_t dims_offset = 0, dims_size = 0;    // raw JSON of "Input Dims" (size 0: none)
  std::uint32_t types_offset = 0, types_size = 0;  // raw JSON of "Input type"
  // allocation instants
  std::int64_t bytes = 0;
  std::int64_t total_allocated = 0;
  std::uint64_t address = 0;
  Device device = Device::cpu;
};

struct ThreadEvents {
  std::int64_t tid = 0;
  std::vector<Record> records;
  std::string arena;  // names and shape JSON, referenced by offset
};

void begin_session(bool record_shapes, bool profile_memory);
// Turns recording off and hands over every thread's records of this session.
std::vector<ThreadEvents> end_session();
std::int64_t next_external_id();
std::int64_t current_thread_id();
// Kineto's spelling of a dtype in "Input type" (c10::BFloat16, float, ...).
const char* kineto_type_name(DType dtype);

}  // namespace attnprof::profiler::detail
