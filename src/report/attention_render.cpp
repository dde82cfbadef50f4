#include "report/attention_render.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <map>
#include <utility>
#include <tuple>

#include "report/insights.h"
#include "trace/json_text.h"

namespace attnprof::report {
namespace {

std::string dim(const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : "?"; }

// "8x32/8x1x" and "x128": the shape around seq_k, which a decode loop grows call by call.
std::pair<std::string, std::string> shape_around_seq_k(const AttentionShape& s) {
  if (!s.seq_q && !s.head_dim) return {"(not recorded)", ""};
  std::string heads = dim(s.heads);
  if (s.kv_heads && s.heads && *s.kv_heads != *s.heads) heads += "/" + dim(s.kv_heads);
  return {fmt::format("{}x{}x{}x", dim(s.batch), heads, dim(s.seq_q)), "x" + dim(s.head_dim)};
}

const char* causal_text(const std::optional<bool>& c) { return !c ? "?" : *c ? "yes" : "no"; }

// "4 cuDNN calls", or "6 calls (4 cuDNN, 2 composed)" when implementations differ.
std::string calls_text(const std::vector<const AttentionCall*>& calls, double per_step_divisor) {
  std::map<std::string, std::size_t> by_impl;
  for (const AttentionCall* c : calls) ++by_impl[implementation_label(c->implementation)];
  auto count = [&](std::size_t n) {
    double v = static_cast<double>(n) / per_step_divisor;
    return v == static_cast<double>(static_cast<std::int64_t>(v)) ? fmt::format("{}", static_cast<std::int64_t>(v))
                                                                  : fmt::format("{:.1f}", v);
  };
  if (by_impl.size() == 1)
    return fmt::format("{} {} call{}", count(calls.size()), by_impl.begin()->first, calls.size() == 1 ? "" : "s");
  std::string parts;
  for (const auto& [impl, n] : by_impl) parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", count(n), impl);
  return fmt::format("{} calls ({})", count(calls.size()), parts);
}

std::string lead_line(const AttentionSummary& s) {
  std::vector<const AttentionCall*> fwd, bwd;
  const bool per_step = !s.steps.empty();
  for (const AttentionCall& c : s.calls) {
    if (per_step && c.step < 0) continue;  // outside every step: not part of a step's time
    (c.pass == AttentionPass::forward ? fwd : bwd).push_back(&c);
  }
  // GPU times are unions of the calls' work (attention_calls.h), per step or over the whole trace.
  std::int64_t fwd_ns = per_step ? 0 : s.forward_device_time_ns, bwd_ns = per_step ? 0 : s.backward_device_time_ns;
  std::int64_t attn_ns = per_step ? 0 : s.attention_device_time_ns, step_ns = 0;
  for (const AttentionStep& st : s.steps) {
    fwd_ns += st.forward_device_time_ns;
    bwd_ns += st.backward_device_time_ns;
    attn_ns += st.attention_device_time_ns;
    step_ns += st.device_time_ns;
  }
  const double steps = per_step ? static_cast<double>(s.steps.size()) : 1.0;
  const double attn = static_cast<double>(attn_ns) / steps;
  std::string line;
  if (per_step && step_ns == 0) {  // a CPU trace: no GPU time to share out, the calls only
    line = "attention: no GPU work in this trace's steps (the table below has their CPU time)";
    if (!fwd.empty()) line += "; forward: " + calls_text(fwd, steps);
    if (!bwd.empty()) line += "; backward: " + calls_text(bwd, steps);
    return line + fmt::format(" (mean of {} step{})\n", s.steps.size(), s.steps.size() == 1 ? "" : "s");
  }
  if (per_step) {
    const double step = static_cast<double>(step_ns) / steps;
    line = fmt::format("attention: {} of {} GPU time per step ({:.1f}%)", format_duration_ns(attn),
                       format_duration_ns(step), 100.0 * attn / step);
  } else {
    line = fmt::format("attention: {} of GPU time (no ProfilerStep#N ranges in this trace)", format_duration_ns(attn));
  }
  std::string sep = ": ";
  if (!fwd.empty()) {
    line += fmt::format("{}forward {} in {}", sep, format_duration_ns(fwd_ns / steps), calls_text(fwd, steps));
    sep = ", ";
  }
  if (!bwd.empty()) line += fmt::format("{}backward {} in {}", sep, format_duration_ns(bwd_ns / steps), calls_text(bwd, steps));
  if (per_step) line += fmt::format(" (mean of {} step{})", s.steps.size(), s.steps.size() == 1 ? "" : "s");
  return line + "\n";
}

}  // namespace

std::string attention_text(const AttentionSummary& s) {
  if (s.calls.empty()) return {};
  std::string out = lead_line(s);
  // One row per distinct call: pass, implementation, shape, dtype, causal.
  using Key = std::tuple<int, std::string, std::pair<std::string, std::string>, std::string, std::string>;
  struct Row {
    std::int64_t calls = 0, kernels = 0, memcpy = 0, memset = 0, device_ns = 0;
    std::int64_t seq_k_min = INT64_MAX, seq_k_max = INT64_MIN;  // calls that differ only in seq_k share a row
  };
  std::map<Key, Row> rows;
  for (const AttentionCall& c : s.calls) {
    Row& r = rows[Key{static_cast<int>(c.pass), implementation_label(c.implementation), shape_around_seq_k(c.shape),
                      c.dtype.empty() ? "?" : c.dtype, causal_text(c.causal)}];
    if (c.shape.seq_k) {
      r.seq_k_min = std::min(r.seq_k_min, *c.shape.seq_k);
      r.seq_k_max = std::max(r.seq_k_max, *c.shape.seq_k);
    }
    ++r.calls;
    r.kernels += c.kernels;
    r.memcpy += c.memcpy;
    r.memset += c.memset;
    r.device_ns += c.device_time_ns;
  }
  out += fmt::format("{:<9} {:<14} {:<22} {:<5} {:<6} {:>6} {:>13} {:>14}\n", "Pass", "Implementation",
                     "Shape BxH[/KVH]xSqxSkxD", "dtype", "causal", "Calls", "GPU ops/call", "GPU time/call");
  for (const auto& [key, r] : rows) {
    const auto& [pass, impl, around, dtype, causal] = key;
    const double n = static_cast<double>(r.calls);
    std::string seq_k = r.seq_k_min > r.seq_k_max    ? std::string("?")
                        : r.seq_k_min == r.seq_k_max ? std::to_string(r.seq_k_min)
                                                     : fmt::format("{}-{}", r.seq_k_min, r.seq_k_max);
    std::string shape = around.second.empty() ? around.first : around.first + seq_k + around.second;
    out += fmt::format("{:<9} {:<14} {:<22} {:<5} {:<6} {:>6} {:>13.2f} {:>14}\n",
                       pass_name(static_cast<AttentionPass>(pass)), impl, shape, dtype, causal, r.calls,
                       static_cast<double>(r.kernels + r.memcpy + r.memset) / n,
                       format_duration_ns(static_cast<double>(r.device_ns) / n));
  }
  return out;
}

std::string attention_json(const AttentionSummary& s) {
  std::string out = "{\"steps\": [";
  for (std::size_t i = 0; i < s.steps.size(); ++i) {
    const AttentionStep& st = s.steps[i];
    out += i ? ", {\"name\": " : "{\"name\": ";
    trace::append_json_string(out, st.name);
    out += ", \"device_time_us\": ";
    trace::append_us(out, st.device_time_ns);
    out += ", \"attention_device_time_us\": ";
    trace::append_us(out, st.attention_device_time_ns);
    out += fmt::format(", \"share\": {:.6f}, \"forward_calls\": {}, \"backward_calls\": {}", st.share(),
                       st.forward_calls, st.backward_calls);
    out += ", \"forward_device_time_us\": ";
    trace::append_us(out, st.forward_device_time_ns);
    out += ", \"backward_device_time_us\": ";
    trace::append_us(out, st.backward_device_time_ns);
    out += "}";
  }
  out += "], \"calls\": [";
  auto opt = [](const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : std::string("null"); };
  for (std::size_t i = 0; i < s.calls.size(); ++i) {
    const AttentionCall& c = s.calls[i];
    out += i ? ",\n  {\"step\": " : "\n  {\"step\": ";
    if (c.step >= 0) trace::append_json_string(out, s.steps[static_cast<std::size_t>(c.step)].name);
    else out += "null";
    out += fmt::format(", \"pass\": \"{}\", \"implementation\": \"{}\", \"op\": ", pass_name(c.pass), c.implementation);
    trace::append_json_string(out, c.op);
    out += fmt::format(
        ", \"shape\": {{\"batch\": {}, \"heads\": {}, \"kv_heads\": {}, \"seq_q\": {}, \"seq_k\": {}, \"head_dim\": {}}}",
        opt(c.shape.batch), opt(c.shape.heads), opt(c.shape.kv_heads), opt(c.shape.seq_q), opt(c.shape.seq_k),
        opt(c.shape.head_dim));
    out += ", \"dtype\": ";
    if (c.dtype.empty()) out += "null";
    else trace::append_json_string(out, c.dtype);
    out += fmt::format(", \"causal\": {}, \"kernels\": {}, \"memcpy\": {}, \"memset\": {}, \"device_time_us\": ",
                       !c.causal ? "null" : *c.causal ? "true" : "false", c.kernels, c.memcpy, c.memset);
    trace::append_us(out, c.device_time_ns);
    out += ", \"kernel_names\": [";
    for (std::size_t k = 0; k < c.kernel_names.size(); ++k) {
      if (k) out += ", ";
      trace::append_json_string(out, c.kernel_names[k]);
    }
    out += "]}";
  }
  out += s.calls.empty() ? "]}" : "\n ]}";
  return out;
}

}  // namespace attnprof::report
