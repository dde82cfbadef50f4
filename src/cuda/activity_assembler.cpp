#include "cuda/activity_assembler.h"

#include <attnprof/error.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

#include "cuda/occupancy.h"
#include "trace/gpu_annotations.h"

namespace attnprof::cuda {
namespace {

using trace::Category;
using trace::Event;
using trace::RawArg;

std::string json_number(double value) { return fmt::format("{}", value); }

void check_complete(const ActivityBatch& batch) {
  if (batch.dropped_records > 0)
    throw Error(fmt::format("CUPTI dropped {} activity records (its buffers were full or not given); the device "
                            "trace would be incomplete, so it is not written",
                            batch.dropped_records));
  const auto kernels = static_cast<std::int64_t>(batch.kernels.size());
  if (batch.launches_seen != kernels)
    throw Error(fmt::format("CUPTI delivered {} kernel records for {} launches seen by the API callbacks; the device "
                            "trace would be incomplete, so it is not written",
                            kernels, batch.launches_seen));
  if (batch.kernels.empty() && batch.memcpys.empty() && batch.memsets.empty())
    throw Error("CUPTI captured no device activity although CUDA profiling was on: nothing ran on the GPU in the "
                "active steps, or CUPTI was not collecting");
}

Event device_event(Category category, std::string name, std::int64_t start, std::int64_t end, std::uint32_t device,
                   std::uint32_t context, std::uint32_t stream, std::uint32_t correlation, const ClockMap& clock) {
  Event e;
  e.category = category;
  e.name = std::move(name);
  e.ts_ns = clock.to_host(start);
  e.dur_ns = std::max<std::int64_t>(clock.to_host(end) - e.ts_ns, 0);
  e.pid = std::to_string(device);
  e.tid = std::to_string(stream);
  e.device = device;
  e.stream = stream;
  e.correlation = correlation;
  e.other_args.push_back({"device", std::to_string(device)});
  e.other_args.push_back({"context", std::to_string(context)});
  e.other_args.push_back({"stream", std::to_string(stream)});
  e.other_args.push_back({"correlation", std::to_string(correlation)});
  return e;
}

void add_bandwidth(Event& e, std::int64_t bytes) {
  e.bytes = bytes;
  e.other_args.push_back({"bytes", std::to_string(bytes)});
  double gbps = e.dur_ns > 0 ? static_cast<double>(bytes) / static_cast<double>(e.dur_ns) : 0.0;
  e.other_args.push_back({"memory bandwidth (GB/s)", json_number(gbps)});
}

Event kernel_event(const KernelRecord& k, const ClockMap& clock, const trace::DeviceProperties& device) {
  Event e = device_event(Category::kernel, k.name, k.start_ns, k.end_ns, k.device, k.context, k.stream, k.correlation,
                         clock);
  trace::KernelLaunch launch;
  for (int i = 0; i < 3; ++i) {
    launch.grid[i] = k.grid[i];
    launch.block[i] = k.block[i];
  }
  launch.registers_per_thread = k.registers_per_thread;
  launch.static_shared_bytes = k.static_shared_bytes;
  launch.dynamic_shared_bytes = k.dynamic_shared_bytes;
  launch.shared_bytes = k.static_shared_bytes + k.dynamic_shared_bytes;
  Footprint f;
  f.threads_per_block = std::int64_t{k.block[0]} * k.block[1] * k.block[2];
  f.registers_per_thread = k.registers_per_thread;
  f.shared_bytes_per_block = launch.shared_bytes;
  f.grid_blocks = std::int64_t{k.grid[0]} * k.grid[1] * k.grid[2];
  OccupancyEstimate occ = estimate_occupancy(f, device);
  launch.blocks_per_sm = f.grid_blocks / static_cast<double>(std::max<std::int64_t>(device.num_sms, 1));
  launch.warps_per_sm = *launch.blocks_per_sm * static_cast<double>((f.threads_per_block + 31) / 32);
  launch.recorded_occupancy_pct = occ.occupancy_pct;
  e.launch = launch;
  e.other_args.push_back({"registers per thread", std::to_string(k.registers_per_thread)});
  e.other_args.push_back({"static shared memory", std::to_string(k.static_shared_bytes)});
  e.other_args.push_back({"dynamic shared memory", std::to_string(k.dynamic_shared_bytes)});
  e.other_args.push_back({"shared memory", std::to_string(launch.shared_bytes)});
  e.other_args.push_back({"blocks per SM", json_number(*launch.blocks_per_sm)});
  e.other_args.push_back({"warps per SM", json_number(*launch.warps_per_sm)});
  e.other_args.push_back({"grid", fmt::format("[{}, {}, {}]", k.grid[0], k.grid[1], k.grid[2])});
  e.other_args.push_back({"block", fmt::format("[{}, {}, {}]", k.block[0], k.block[1], k.block[2])});
  e.other_args.push_back({"est. achieved occupancy %", json_number(std::round(occ.occupancy_pct * 100.0) / 100.0)});
  e.other_args.push_back({"occupancy estimate", fmt::format("\"estimated from the footprint: {:.1f}% ({} warps/SM), "
                                                            "limited by {}: {}\"",
                                                            occ.occupancy_pct, occ.warps_per_sm, occ.limiter,
                                                            occ.explanation)});
  e.other_args.push_back({"occupancy limiter", fmt::format("\"{}\"", occ.limiter)});
  return e;
}

}  // namespace

std::string memcpy_event_name(CopyKind kind) {
  switch (kind) {
    case CopyKind::host_to_device: return "Memcpy HtoD (Pageable -> Device)";
    case CopyKind::device_to_host: return "Memcpy DtoH (Device -> Pageable)";
    case CopyKind::device_to_device: return "Memcpy DtoD (Device -> Device)";
    case CopyKind::host_to_host: return "Memcpy HtoH (Pageable -> Pageable)";
    case CopyKind::other: break;
  }
  return "Memcpy";
}

AssemblyReport assemble_activity(trace::Trace& trace, const ActivityBatch& batch, const ClockMap& clock,
                                 const trace::DeviceProperties& device) {
  check_complete(batch);
  AssemblyReport report;
  report.launches_seen = batch.launches_seen;
  std::vector<Event> events;

  // Device side, by correlation id (one device activity per launch/copy/set call).
  struct DeviceEnd {
    std::int64_t ts_ns, end_ns;
    std::string pid, tid;
  };
  std::unordered_map<std::uint32_t, DeviceEnd> device_by_correlation;
  for (const KernelRecord& k : batch.kernels) {
    events.push_back(kernel_event(k, clock, device));
    ++report.kernels;
  }
  for (const MemcpyRecord& m : batch.memcpys) {
    Event e = device_event(Category::gpu_memcpy, memcpy_event_name(m.kind), m.start_ns, m.end_ns, m.device, m.context,
                           m.stream, m.correlation, clock);
    add_bandwidth(e, m.bytes);
    events.push_back(std::move(e));
    ++report.memcpys;
  }
  for (const MemsetRecord& m : batch.memsets) {
    Event e = device_event(Category::gpu_memset, "Memset (Device)", m.start_ns, m.end_ns, m.device, m.context, m.stream,
                           m.correlation, clock);
    add_bandwidth(e, m.bytes);
    events.push_back(std::move(e));
    ++report.memsets;
  }
  for (const Event& e : events) device_by_correlation.emplace(static_cast<std::uint32_t>(e.correlation),
                                                               DeviceEnd{e.ts_ns, e.end_ns(), e.pid, e.tid});

  // Host side: API calls, and a flow from each to its device work.
  std::vector<Event> api_events;
  for (const ApiRecord& a : batch.apis) {
    Event e;
    e.category = a.driver ? Category::cuda_driver : Category::cuda_runtime;
    e.name = a.name;
    e.ts_ns = clock.to_host(a.start_ns);
    e.dur_ns = std::max<std::int64_t>(clock.to_host(a.end_ns) - e.ts_ns, 0);
    e.pid = std::to_string(a.process);
    e.tid = std::to_string(a.thread);
    e.correlation = a.correlation;
    e.other_args.push_back({"cbid", std::to_string(a.cbid)});
    e.other_args.push_back({"correlation", std::to_string(a.correlation)});
    auto target = device_by_correlation.find(a.correlation);
    if (target != device_by_correlation.end()) {
      trace::Flow flow;
      flow.id = a.correlation;
      flow.start_ts_ns = e.ts_ns;
      flow.start_pid = e.pid;
      flow.start_tid = e.tid;
      flow.end_ts_ns = target->second.ts_ns;
      flow.end_pid = target->second.pid;
      flow.end_tid = target->second.tid;
      flow.has_start = flow.has_end = true;
      trace.flows.push_back(flow);
      ++report.flows;
    }
    api_events.push_back(std::move(e));
    ++report.api_calls;
  }

  for (auto& e : events) trace.events.push_back(std::move(e));
  for (auto& e : api_events) trace.events.push_back(std::move(e));
  trace.dropped_records += batch.dropped_records;
  report.annotations = trace::add_gpu_user_annotations(trace);
  return report;
}

}  // namespace attnprof::cuda
