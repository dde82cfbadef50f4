#pragma once
// Turns one capture's activity records into trace events, Kineto's way: kernels, memcpys and
// memsets on the device lane (pid = device, tid = stream); runtime/driver calls on their host
// thread; an ac2g flow from each launch to the device work with its correlation id; a
// gpu_user_annotation on the device lane for each CPU user_annotation already in the trace
// (attn_fwd), spanning the device work its launches produced; every kernel's footprint with an
// occupancy estimate naming its limiter. Then checks completeness: dropped records, launches the
// callbacks saw without a kernel record, or an empty capture are errors, never a quiet success.
#include <attnprof/trace.h>

#include <string>

#include "cuda/activity_records.h"
#include "cuda/clock_map.h"

namespace attnprof::cuda {

struct AssemblyReport {
  std::int64_t kernels = 0, memcpys = 0, memsets = 0, api_calls = 0, flows = 0, annotations = 0;
  std::int64_t launches_seen = 0;
  std::int64_t dropped_records = 0;
};

// Appends to `trace`. Throws Error (after appending nothing) when the capture is incomplete.
AssemblyReport assemble_activity(trace::Trace& trace, const ActivityBatch& batch, const ClockMap& clock,
                                 const trace::DeviceProperties& device);

// Kineto's spellings: "Memcpy DtoD (Device -> Device)", "Memset (Device)".
std::string memcpy_event_name(CopyKind kind);

}  // namespace attnprof::cuda
