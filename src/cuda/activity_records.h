#pragma once
// CUPTI activity records as plain structs: the real CuptiApi parses CUpti_Activity* into these,
// and tests fabricate them, so correlation, flows, occupancy and trace assembly run without CUPTI.
// Timestamps are CUPTI's (ns); ClockMap moves them onto profiler::now_ns()'s clock.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace attnprof::cuda {

struct KernelRecord {
  std::string name;  // demangled
  std::int64_t start_ns = 0, end_ns = 0;
  std::uint32_t correlation = 0;
  std::uint32_t device = 0, context = 0, stream = 0;
  std::array<std::int32_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  std::int32_t registers_per_thread = 0;
  std::int32_t static_shared_bytes = 0, dynamic_shared_bytes = 0;
};

enum class CopyKind { host_to_device, device_to_host, device_to_device, host_to_host, other };

struct MemcpyRecord {
  CopyKind kind = CopyKind::other;
  std::int64_t bytes = 0;
  std::int64_t start_ns = 0, end_ns = 0;
  std::uint32_t correlation = 0;
  std::uint32_t device = 0, context = 0, stream = 0;
};

struct MemsetRecord {
  std::int64_t bytes = 0;
  std::int64_t start_ns = 0, end_ns = 0;
  std::uint32_t correlation = 0;
  std::uint32_t device = 0, context = 0, stream = 0;
};

// A runtime (cuda*) or driver (cu*) API call on a host thread.
struct ApiRecord {
  bool driver = false;
  std::string name;
  std::uint32_t cbid = 0;
  std::int64_t start_ns = 0, end_ns = 0;
  std::uint32_t correlation = 0;
  std::uint32_t process = 0, thread = 0;
};

struct ActivityBatch {
  std::vector<KernelRecord> kernels;
  std::vector<MemcpyRecord> memcpys;
  std::vector<MemsetRecord> memsets;
  std::vector<ApiRecord> apis;
  std::int64_t dropped_records = 0;  // cuptiActivityGetNumDroppedRecords, summed over buffers
  std::int64_t launches_seen = 0;    // kernel launches counted by the API callbacks (runtime or driver, not both)
};

}  // namespace attnprof::cuda
