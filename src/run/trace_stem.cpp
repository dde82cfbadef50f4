#include "run/trace_stem.h"

#include <attnprof/compare.h>
#include <fmt/format.h>

#include <cstdint>

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

// Everything after the device in a stem: the tokens of trace_stem's list, each where it differs
// from the default.
std::string config_tokens(const RunOptions& o) {
  const AttentionSpec& s = o.spec;
  std::string stem;
  if (o.pass != Pass::forward) stem += fmt::format("_{}", pass_name(o.pass));
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
  if (o.min_time_s != kDefaultMinTimeS) stem += fmt::format("_mt{}", o.min_time_s);
  const KernelOverrides& k = o.kernels;  // --flash-schedule, --cudnn-engine, --deterministic, --cpu-isa
  if (!k.flash_schedule.empty()) stem += fmt::format("_{}", k.flash_schedule);
  if (k.cudnn_engine >= 0) stem += fmt::format("_engine{}", k.cudnn_engine);
  if (k.deterministic) stem += "_deterministic";
  if (!k.cpu_isa.empty()) stem += fmt::format("_isa-{}", k.cpu_isa);
  return stem;
}

// "_<letter><items joined by '+'>", the items file_safe (so a '+' inside one is %2B and the
// list reads back unambiguously); a token over 64 characters becomes
// "_<letter>=<FNV-1a 64-bit hash of the items, 16 hex digits>" ('=' is outside file_safe's
// characters, so no list spelled out reads the same; a file name stays far below NAME_MAX).
std::string list_token(char letter, const std::vector<std::string>& items) {
  std::string joined;
  for (const std::string& item : items) {
    if (!joined.empty()) joined += '+';
    joined += file_safe(item);
  }
  if (joined.size() <= 64) return fmt::format("_{}{}", letter, joined);
  std::uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : joined) hash = (hash ^ c) * 1099511628211ull;
  return fmt::format("_{}={:016x}", letter, hash);
}

std::vector<std::string> numbers(const std::vector<std::int64_t>& values) {
  std::vector<std::string> out;
  for (std::int64_t v : values) out.push_back(std::to_string(v));
  return out;
}

}  // namespace

std::string trace_stem(const RunOptions& o) {
  const AttentionSpec& s = o.spec;
  return fmt::format("{}_{}_{}_{}_{}_{}", s.batch, s.heads, s.seq_q, s.head_dim, file_safe(o.variant),
                     device_name(s.device)) +
         config_tokens(o);
}

std::string compare_stem(const RunOptions& o, const std::vector<std::string>& variants) {
  const AttentionSpec& s = o.spec;
  std::string stem =
      fmt::format("compare_{}_{}_{}_{}_{}", s.batch, s.heads, s.seq_q, s.head_dim, device_name(s.device)) +
      config_tokens(o);
  if (o.rounds != compare_rounds(s.device)) stem += fmt::format("_r{}", o.rounds);
  if (!variants.empty()) stem += list_token('v', variants);
  return stem;
}

std::string sweep_stem(const RunOptions& o, const std::vector<std::int64_t>& seqs,
                       const std::vector<std::int64_t>& head_dims, const std::vector<std::string>& variants,
                       const std::vector<std::int64_t>& seq_ks) {
  const AttentionSpec& s = o.spec;
  std::string stem = fmt::format("sweep_{}_{}_{}", s.batch, s.heads, device_name(s.device)) + config_tokens(o);
  if (!o.profile) stem += "_noprofile";
  stem += list_token('s', numbers(seqs));
  if (!seq_ks.empty()) stem += list_token('k', numbers(seq_ks));
  stem += list_token('d', numbers(head_dims));
  if (!variants.empty()) stem += list_token('v', variants);  // last: a variant's name cannot imitate a token
  return stem;
}

}  // namespace attnprof
