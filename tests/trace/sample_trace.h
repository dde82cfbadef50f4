#pragma once
// A small hand-built trace with every modelled field and awkward names.
#include <attnprof/trace.h>

namespace attnprof::testing {

inline trace::Trace sample_trace() {
  using trace::Category;
  trace::Trace t;
  t.trace_name = "sample \"trace\"";
  t.base_time_ns = 1790857026000000000;
  trace::DeviceProperties d;
  d.name = "NVIDIA H200";
  d.total_global_mem = 150109880320;
  d.compute_major = 9;
  d.max_threads_per_block = 1024;
  d.max_threads_per_sm = 2048;
  d.regs_per_block = d.regs_per_sm = 65536;
  d.shared_per_block = 49152;
  d.shared_per_block_optin = 232448;
  d.shared_per_sm = 233472;
  d.num_sms = 132;
  d.max_blocks_per_sm = 32;
  t.devices.push_back(d);
  t.other_top_level.push_back({"cuda_driver_version", "13000"});
  t.dropped_records = 2;
  trace::Metadata m;
  m.name = "process_name";
  m.pid = "515";
  m.tid = "0";
  m.ts_ns = 100;
  m.args.push_back({"name", "\"python3\""});
  t.metadata.push_back(m);
  m.name = "process_sort_index";
  m.pid = "Spans";
  m.args = {{"sort_index", "536870912"}};
  t.metadata.push_back(m);

  auto event = [&](Category c, std::string name, std::int64_t ts, std::int64_t dur, std::string pid, std::string tid) {
    trace::Event e;
    e.category = c;
    e.name = std::move(name);
    e.ts_ns = ts;
    e.dur_ns = dur;
    e.pid = std::move(pid);
    e.tid = std::move(tid);
    return e;
  };
  trace::Event step = event(Category::user_annotation, "ProfilerStep#2", 1000, 9000, "515", "515");
  step.external_id = 1;
  t.events.push_back(step);
  trace::Event op = event(Category::cpu_op, "aten::mul<\"q\", \\back\\, \x01\x1f ctl, std::vector<int>> µs → 注意 😀",
                          1500, 2001, "515", "515");
  op.external_id = 2;
  op.input_dims = "[[8, 16, 1024, 64], []]";
  op.input_types = "[\"c10::BFloat16\", \"\"]";
  op.other_args.push_back({"Record function id", "0"});
  op.other_args.push_back({"Concrete \"Inputs\"", "[\"\", \"1.25\"]"});
  t.events.push_back(op);
  trace::Event rt = event(Category::cuda_runtime, "cudaLaunchKernel", 1600, 300, "515", "515");
  rt.correlation = 90;
  rt.external_id = 2;
  rt.other_args.push_back({"cbid", "211"});
  t.events.push_back(rt);
  trace::Event k = event(Category::kernel, "void flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4>>", 5000,
                         93728, "0", "7");
  k.correlation = 90;
  k.external_id = 2;
  k.device = 0;
  k.stream = 7;
  trace::KernelLaunch l;
  l.grid = {8, 16, 8};
  l.block = {128, 1, 1};
  l.registers_per_thread = 255;
  l.shared_bytes = 49152;
  l.static_shared_bytes = 0;
  l.dynamic_shared_bytes = 49152;
  l.blocks_per_sm = 0.969697;
  l.warps_per_sm = 3.878788;
  l.recorded_occupancy_pct = 6;
  k.launch = l;
  k.other_args.push_back({"queued", "0"});
  t.events.push_back(k);
  trace::Event mc = event(Category::gpu_memcpy, "Memcpy DtoD (Device -> Device)", 99000, 126975, "0", "7");
  mc.bytes = 268435456;
  mc.correlation = 91;
  mc.device = 0;
  mc.stream = 7;
  mc.other_args.push_back({"memory bandwidth (GB/s)", "2114.08"});
  t.events.push_back(mc);
  trace::Event mem = event(Category::cpu_instant_event, "[memory]", 1700, 0, "515", "515");
  mem.phase = 'i';
  mem.scope = 't';
  mem.bytes = -4096;
  mem.total_allocated = 1024;
  mem.device = -1;
  mem.other_args.push_back({"Addr", "94558231"});
  t.events.push_back(mem);
  trace::Event odd = event(Category::other, "Iteration Start: PyTorch Profiler", 900, 0, "Traces", "Trace PyTorch Profiler");
  odd.phase = 'i';
  odd.scope = 'g';
  t.events.push_back(odd);
  trace::Event overhead = event(Category::other, "Buffer flush", 20000, 10, "515", "516");
  overhead.raw_category = "overhead";
  t.events.push_back(overhead);
  trace::Flow f;
  f.id = 90;
  f.has_start = f.has_end = true;
  f.start_ts_ns = 1600;
  f.start_pid = f.start_tid = "515";
  f.end_ts_ns = 5000;
  f.end_pid = "0";
  f.end_tid = "7";
  t.flows.push_back(f);
  trace::Flow half;
  half.id = 307;
  half.has_start = true;
  half.start_ts_ns = 1700;
  half.start_pid = half.start_tid = "515";
  t.flows.push_back(half);
  return t;
}

}  // namespace attnprof::testing
