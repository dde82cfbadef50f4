#pragma once
// The work of each forward in a trace: every GPU kernel, memcpy and memset (or CPU kernel)
// attributed to the forward that launched it, with the chain of ops that launched it.
//
// A forward is a CPU `attn_fwd` range (or a range of the names given: report/named_ranges.h);
// without one, a `ProfilerStep#N`; without either, the whole trace. GPU work runs after its launch, often after the range ended, so it is attributed
// through its launch call (correlation id), else through the op with its External id.
#include <attnprof/trace.h>

#include <cstdint>
#include <string>
#include <vector>

#include "report/kernel_class.h"

namespace attnprof::report {

struct WorkItem {
  const trace::Event* event = nullptr;   // kernel, gpu_memcpy, gpu_memset or cpu_kernel
  const trace::Event* launch = nullptr;  // the cuda_runtime / cuda_driver call, when known
  std::vector<const trace::Event*> ops;  // launching cpu_ops, innermost first
  KernelClass kind = KernelClass::other;

  // The innermost op's name ("aten::masked_fill_"), else the kernel's short name.
  std::string label() const;
  // "aten::masked_fill › aten::clone › aten::copy_", outermost first.
  std::string op_path() const;
  bool launched_by(std::string_view op_name) const;  // any op of the chain has this exact name
  bool is_device() const { return event->category != trace::Category::cpu_kernel; }
};

struct Forward {
  const trace::Event* range = nullptr;  // nullptr when the forward is the whole trace or a window
  std::string name;                     // the range's name, or the window's ("" for the whole trace)
  std::int64_t start_ns = 0, end_ns = 0;  // the range's or the window's host time (0, 0: whole trace)
  std::vector<WorkItem> work;           // in launch order
  std::int64_t cpu_ns = 0;              // the range's duration
  // Summed durations of the work items (a kernel class's share of the work divides by this), and
  // the union of their intervals (report/interval_union.h): how long the device was busy with them,
  // less than the sum when kernels overlap in time.
  std::int64_t work_ns = 0;
  std::int64_t busy_ns = 0;

  int count(KernelClass kind) const;
  int kernels() const;  // everything but memcpys and memsets
};

struct TraceWork {
  std::vector<Forward> forwards;
  bool gpu = false;                 // the trace holds GPU activity
  std::int64_t unattributed = 0;    // device work no forward launched (outside the ranges)

  double per_forward(KernelClass kind) const;
  double kernels_per_forward() const;
  double cpu_ns_per_forward() const;
  double busy_ns_per_forward() const;
};

TraceWork collect_forwards(const trace::Trace& trace);  // the attn_fwd ranges
// The ranges of these names; a named range nested in another is part of the outer one.
TraceWork collect_forwards(const trace::Trace& trace, const std::vector<std::string>& range_names);

// A forward given as a time window on one thread (an attention call the finder found in a
// model's trace): its work is what that thread launched, or ran as CPU kernels, inside it; its
// op chains stop at the window's start.
struct WorkWindow {
  std::string name;  // what the window is (an attention call: its op)
  std::string pid, tid;
  std::int64_t start_ns = 0, end_ns = 0;
};
TraceWork collect_windows(const trace::Trace& trace, const std::vector<WorkWindow>& windows);

// The device (by id; the first one when the id is unknown), or nullptr when the trace has none.
const trace::DeviceProperties* find_device(const trace::Trace& trace, std::int64_t id);

}  // namespace attnprof::report
