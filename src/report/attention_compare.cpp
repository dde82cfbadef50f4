#include "report/attention_compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "report/insights.h"
#include "trace/json_text.h"

namespace attnprof::report {
namespace {

std::string number_json(const std::optional<double>& v, const char* spec = "{:.3f}") {
  return v ? fmt::format(fmt::runtime(spec), *v) : std::string("null");
}

std::optional<double> us(const std::optional<double>& ns) {
  if (!ns) return std::nullopt;
  return *ns / 1000.0;
}

// "same", or "+1.23 ms (+12.0%)"; the percentage only when the before value is not zero.
std::string duration_change(const std::optional<double>& before, const std::optional<double>& after) {
  if (!before || !after) return "-";
  const double d = *after - *before;
  if (d == 0) return "same";
  std::string out = (d > 0 ? "+" : "-") + format_duration_ns(d > 0 ? d : -d);
  if (*before != 0) out += fmt::format(" ({:+.1f}%)", 100.0 * d / *before);
  return out;
}

std::optional<double> relative_change(const std::optional<double>& before, const std::optional<double>& after) {
  if (!before || !after || *before == 0) return std::nullopt;
  return (*after - *before) / *before;
}

std::string count_text(double v) {
  return v == static_cast<double>(static_cast<std::int64_t>(v)) ? fmt::format("{}", static_cast<std::int64_t>(v))
                                                                : fmt::format("{:.1f}", v);
}

std::string ops_text(const std::optional<double>& v) { return v ? fmt::format("{:.2f}", *v) : "-"; }

// "same", or the signed difference: "+4" for call counts, "-12.00" for GPU ops per call.
std::string plain_change(const std::optional<double>& before, const std::optional<double>& after, bool count) {
  if (!before || !after) return "-";
  const double d = *after - *before;
  if (d == 0) return "same";
  return count ? (d > 0 ? "+" : "-") + count_text(d > 0 ? d : -d) : fmt::format("{:+.2f}", d);
}

std::string labels(const AttentionTotals& t) {
  if (t.implementations.empty()) return "none";
  std::string out;
  for (const std::string& impl : t.implementations) out += (out.empty() ? "" : ", ") + implementation_label(impl);
  return out;
}

std::string share_text(const AttentionTotals& t) {
  auto s = t.share();
  return s ? fmt::format("{:.1f}%", 100.0 * *s) : "-";
}

// The fields one trace's totals have in the JSON of --diff and of the rank table.
std::string totals_fields(const std::string& trace, const AttentionTotals& t) {
  std::string out = "\"trace\": ";
  trace::append_json_string(out, trace);
  out += ", \"implementations\": [";
  for (std::size_t i = 0; i < t.implementations.size(); ++i) {
    if (i) out += ", ";
    trace::append_json_string(out, t.implementations[i]);
  }
  out += fmt::format(
      "], \"steps\": {}, \"step_device_time_us\": {}, \"attention_device_time_us\": {:.3f}, \"share\": {}, "
      "\"forward_device_time_us\": {:.3f}, \"backward_device_time_us\": {:.3f}, \"forward_calls\": {}, "
      "\"backward_calls\": {}, \"forward_gpu_ops_per_call\": {}, \"backward_gpu_ops_per_call\": {}",
      t.steps, number_json(us(t.step_device_ns)), t.attention_ns / 1000.0, number_json(t.share(), "{:.6f}"),
      t.forward_ns / 1000.0, t.backward_ns / 1000.0, t.forward_calls, t.backward_calls,
      number_json(t.forward_ops_per_call), number_json(t.backward_ops_per_call));
  return out;
}

struct Ranked {
  std::vector<std::int64_t> ranks;  // per input
  bool from_distributed_info = false;
  std::string note;
  std::optional<std::size_t> slowest, fastest;  // input indices
};

Ranked rank_inputs(const std::vector<RankInput>& inputs) {
  Ranked r;
  std::set<std::int64_t> seen;
  std::string why;
  for (const RankInput& in : inputs) {
    if (!in.recorded_rank) {
      why = fmt::format("{} has no distributedInfo rank", in.trace);
      break;
    }
    if (!seen.insert(*in.recorded_rank).second) {
      why = fmt::format("distributedInfo rank {} appears twice", *in.recorded_rank);
      break;
    }
  }
  r.from_distributed_info = why.empty();
  r.note = why.empty() ? "ranks from each trace's distributedInfo" : "ranks by file order: " + why;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    r.ranks.push_back(r.from_distributed_info ? *inputs[i].recorded_rank : static_cast<std::int64_t>(i));
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto& step = inputs[i].totals.step_device_ns;
    if (!step) continue;
    if (!r.slowest || *step > *inputs[*r.slowest].totals.step_device_ns) r.slowest = i;
    if (!r.fastest || *step < *inputs[*r.fastest].totals.step_device_ns) r.fastest = i;
  }
  return r;
}

}  // namespace

std::optional<double> AttentionTotals::share() const {
  if (!step_device_ns || *step_device_ns <= 0) return std::nullopt;
  return attention_ns / *step_device_ns;
}

AttentionTotals attention_totals(const AttentionSummary& s) {
  AttentionTotals t;
  t.steps = s.steps.size();
  const bool per_step = !s.steps.empty();
  const double n = per_step ? static_cast<double>(s.steps.size()) : 1.0;
  double fwd_calls = 0, bwd_calls = 0, fwd_ops = 0, bwd_ops = 0;
  // GPU times are unions of the calls' work (attention_calls.h), per step or over the whole trace.
  double step_ns = 0, fwd_ns = 0, bwd_ns = 0, attn_ns = 0;
  if (!per_step) {
    fwd_ns = static_cast<double>(s.forward_device_time_ns);
    bwd_ns = static_cast<double>(s.backward_device_time_ns);
    attn_ns = static_cast<double>(s.attention_device_time_ns);
  }
  for (const AttentionStep& st : s.steps) {
    step_ns += static_cast<double>(st.device_time_ns);
    fwd_ns += static_cast<double>(st.forward_device_time_ns);
    bwd_ns += static_cast<double>(st.backward_device_time_ns);
    attn_ns += static_cast<double>(st.attention_device_time_ns);
  }
  std::set<std::string> impls;
  for (const AttentionCall& c : s.calls) {
    if (per_step && c.step < 0) continue;
    impls.insert(c.implementation);
    const double ops = static_cast<double>(c.kernels + c.memcpy + c.memset);
    if (c.pass == AttentionPass::forward) {
      ++fwd_calls, fwd_ops += ops;
    } else {
      ++bwd_calls, bwd_ops += ops;
    }
  }
  if (per_step) t.step_device_ns = step_ns / n;
  t.forward_ns = fwd_ns / n;
  t.backward_ns = bwd_ns / n;
  t.attention_ns = attn_ns / n;
  t.forward_calls = fwd_calls / n;
  t.backward_calls = bwd_calls / n;
  if (fwd_calls > 0) t.forward_ops_per_call = fwd_ops / fwd_calls;
  if (bwd_calls > 0) t.backward_ops_per_call = bwd_ops / bwd_calls;
  t.implementations.assign(impls.begin(), impls.end());
  return t;
}

std::string attention_diff_text(const std::string& before_trace, const AttentionTotals& b,
                                const std::string& after_trace, const AttentionTotals& a) {
  // Per step on both sides, or over the whole trace on both (no ProfilerStep#N in either); a
  // per-step side against a whole-trace side is shown but not compared.
  const bool comparable = (a.steps > 0) == (b.steps > 0);
  std::string out = fmt::format("diff: before {} ({} step{}), after {} ({} step{}); GPU time {}\n", before_trace,
                                b.steps, b.steps == 1 ? "" : "s", after_trace, a.steps, a.steps == 1 ? "" : "s",
                                !comparable    ? "per step on one side, over the whole trace on the other: not compared"
                                : a.steps > 0 ? "per step"
                                              : "over the whole trace (neither has ProfilerStep#N ranges)");
  auto row = [&](const char* what, const std::string& before, const std::string& after, const std::string& change) {
    out += fmt::format("{:<28} {:>16} {:>16}  {}\n", what, before, after, comparable ? change : std::string("-"));
  };
  auto duration = [](const std::optional<double>& ns) { return ns ? format_duration_ns(*ns) : std::string("-"); };
  row("", "before", "after", "change");
  row("implementation", labels(b), labels(a), labels(b) == labels(a) ? "same" : labels(b) + " -> " + labels(a));
  row("step GPU time", duration(b.step_device_ns), duration(a.step_device_ns),
      duration_change(b.step_device_ns, a.step_device_ns));
  row("attention GPU time", duration(b.attention_ns), duration(a.attention_ns),
      duration_change(b.attention_ns, a.attention_ns));
  row("  forward", duration(b.forward_ns), duration(a.forward_ns), duration_change(b.forward_ns, a.forward_ns));
  row("  backward", duration(b.backward_ns), duration(a.backward_ns), duration_change(b.backward_ns, a.backward_ns));
  const auto bs = b.share(), as = a.share();
  row("attention share of step", share_text(b), share_text(a),
      bs && as ? (*bs == *as ? std::string("same") : fmt::format("{:+.1f} points", 100.0 * (*as - *bs))) : "-");
  row("forward calls", count_text(b.forward_calls), count_text(a.forward_calls),
      plain_change(b.forward_calls, a.forward_calls, true));
  row("backward calls", count_text(b.backward_calls), count_text(a.backward_calls),
      plain_change(b.backward_calls, a.backward_calls, true));
  row("GPU ops per forward call", ops_text(b.forward_ops_per_call), ops_text(a.forward_ops_per_call),
      plain_change(b.forward_ops_per_call, a.forward_ops_per_call, false));
  row("GPU ops per backward call", ops_text(b.backward_ops_per_call), ops_text(a.backward_ops_per_call),
      plain_change(b.backward_ops_per_call, a.backward_ops_per_call, false));
  return out;
}

std::string attention_diff_json(const std::string& before_trace, const AttentionTotals& b,
                                const std::string& after_trace, const AttentionTotals& a) {
  std::string out = "{\"before\": {" + totals_fields(before_trace, b) + "},\n  \"after\": {" +
                    totals_fields(after_trace, a) + "},\n  \"change\": {";
  const auto bs = b.share(), as = a.share();
  // A per-step side against a whole-trace side: every change is null (attention_diff_text).
  const bool comparable = (a.steps > 0) == (b.steps > 0);
  auto when_comparable = [&](std::optional<double> v) { return comparable ? v : std::nullopt; };
  std::optional<double> step_us, share_points;
  if (b.step_device_ns && a.step_device_ns) step_us = (*a.step_device_ns - *b.step_device_ns) / 1000.0;
  if (bs && as) share_points = 100.0 * (*as - *bs);
  out += fmt::format(
      "\"comparable\": {}, \"implementation_changed\": {}, \"step_device_time_us\": {}, "
      "\"step_device_time_relative\": {}, \"attention_device_time_us\": {}, \"attention_device_time_relative\": {}, "
      "\"share_points\": {}, \"forward_device_time_us\": {}, \"backward_device_time_us\": {}}}}}",
      comparable ? "true" : "false", b.implementations != a.implementations ? "true" : "false",
      number_json(step_us),
      number_json(relative_change(b.step_device_ns, a.step_device_ns), "{:.6f}"),
      number_json(when_comparable((a.attention_ns - b.attention_ns) / 1000.0), "{:.3f}"),
      number_json(when_comparable(relative_change(b.attention_ns, a.attention_ns)), "{:.6f}"),
      number_json(share_points, "{:.3f}"),
      number_json(when_comparable((a.forward_ns - b.forward_ns) / 1000.0), "{:.3f}"),
      number_json(when_comparable((a.backward_ns - b.backward_ns) / 1000.0), "{:.3f}"));
  return out;
}

std::string ranks_text(const std::vector<RankInput>& inputs) {
  const Ranked r = rank_inputs(inputs);
  std::string out = fmt::format("{:>6}  {:>5}  {:>13}  {:>13}  {:>6}  {:>12}  {:>12}  {}\n", "Rank", "Steps",
                                "Step GPU time", "Attention", "Share", "Forward", "Backward", "Trace");
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const AttentionTotals& t = inputs[i].totals;
    // A trace without ProfilerStep#N has no per-step times: its whole-trace totals are not shown
    // in a column of means per step (its JSON row carries them, with steps 0).
    auto per_step = [&](double ns) { return t.steps > 0 ? format_duration_ns(ns) : std::string("-"); };
    out += fmt::format("{:>6}  {:>5}  {:>13}  {:>13}  {:>6}  {:>12}  {:>12}  {}\n", r.ranks[i], t.steps,
                       t.step_device_ns ? format_duration_ns(*t.step_device_ns) : "-", per_step(t.attention_ns),
                       t.steps > 0 ? share_text(t) : "-", per_step(t.forward_ns), per_step(t.backward_ns),
                       inputs[i].trace);
  }
  out += "(" + r.note + "; times are means per ProfilerStep#N)\n";
  if (!r.slowest) return out + "slowest rank: none ranked (no trace has ProfilerStep#N ranges)\n";
  const double slow = *inputs[*r.slowest].totals.step_device_ns, fast = *inputs[*r.fastest].totals.step_device_ns;
  out += fmt::format("slowest rank: {} ({}): {} GPU time per step, attention {}", r.ranks[*r.slowest],
                     inputs[*r.slowest].trace, format_duration_ns(slow),
                     format_duration_ns(inputs[*r.slowest].totals.attention_ns));
  if (*r.slowest == *r.fastest) return out + " (every ranked trace takes the same time)\n";
  out += fmt::format("; {} over the fastest, rank {}\n", duration_change(fast, slow), r.ranks[*r.fastest]);
  return out;
}

std::string ranks_json(const std::vector<RankInput>& inputs) {
  const Ranked r = rank_inputs(inputs);
  std::string out = fmt::format("{{\"source\": \"{}\", \"note\": ",
                                r.from_distributed_info ? "distributedInfo" : "file order");
  trace::append_json_string(out, r.note);
  out += ", \"rows\": [";
  for (std::size_t i = 0; i < inputs.size(); ++i)
    out += fmt::format("{}{{\"rank\": {}, {}}}", i ? ",\n  " : "\n  ", r.ranks[i],
                       totals_fields(inputs[i].trace, inputs[i].totals));
  out += "]";
  auto named = [&](const char* key, const std::optional<std::size_t>& i) {
    out += fmt::format(", \"{}\": ", key);
    if (!i) {
      out += "null";
      return;
    }
    out += fmt::format("{{\"rank\": {}, \"trace\": ", r.ranks[*i]);
    trace::append_json_string(out, inputs[*i].trace);
    out += fmt::format(", \"step_device_time_us\": {:.3f}}}", *inputs[*i].totals.step_device_ns / 1000.0);
  };
  named("slowest", r.slowest);
  named("fastest", r.fastest);
  return out + "}";
}

}  // namespace attnprof::report
