#include "run/trace_stem.h"

#include <fmt/format.h>

namespace attnprof {
namespace {

std::string file_safe(const std::string& name) {
  std::string out;
  for (unsigned char c : name) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                       c == '.' || c == '-';
    out += plain ? std::string(1, static_cast<char>(c)) : fmt::format("%{:02X}", c);
  }
  return out;
}

}  // namespace

std::string trace_stem(const RunOptions& o) {
  const AttentionSpec& s = o.spec;
  std::string stem = fmt::format("{}_{}_{}_{}_{}_{}", s.batch, s.heads, s.seq_q, s.head_dim, file_safe(o.variant),
                                 device_name(s.device));
  if (s.dtype != DType::bf16) stem += fmt::format("_{}", dtype_name(s.dtype));
  if (!s.causal) {
    stem += "_nocausal";
  } else if (s.causal_align != CausalAlign::top_left) {
    stem += fmt::format("_causal-{}", causal_align_name(s.causal_align));
  }
  if (s.layout != Layout::bhsd) stem += fmt::format("_{}", layout_name(s.layout));
  if (s.kv_heads != s.heads) stem += fmt::format("_kv{}", s.kv_heads);
  if (s.seq_k != s.seq_q) stem += fmt::format("_sk{}", s.seq_k);
  if (o.threads != 0) stem += fmt::format("_t{}", o.threads);
  if (o.seed != 0) stem += fmt::format("_seed{}", o.seed);
  const profiler::Schedule defaults = RunOptions{}.schedule;  // the CLI's --wait/--warmup/--active defaults
  const profiler::Schedule& p = o.schedule;
  if (p.wait != defaults.wait || p.warmup != defaults.warmup || p.active != defaults.active) {
    stem += fmt::format("_sched{}-{}-{}", p.wait, p.warmup, p.active);  // run_variant always repeats once
  }
  const KernelOverrides& k = o.kernels;  // --flash-schedule, --cudnn-engine, --cpu-isa
  if (!k.flash_schedule.empty()) stem += fmt::format("_{}", k.flash_schedule);
  if (k.cudnn_engine >= 0) stem += fmt::format("_engine{}", k.cudnn_engine);
  if (!k.cpu_isa.empty()) stem += fmt::format("_isa-{}", k.cpu_isa);
  return stem;
}

}  // namespace attnprof
