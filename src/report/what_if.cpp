#include "report/what_if.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "report/insights.h"

namespace attnprof::report {
namespace {

std::string dim(const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : "?"; }

// The shape a variant runs for a call, or what the trace left out.
WhatIfShape shape_of(const AttentionCall& c, Device device) {
  WhatIfShape w;
  const AttentionShape& s = c.shape;
  if (!s.batch || !s.heads || !s.kv_heads || !s.seq_q || !s.seq_k || !s.head_dim) {
    w.label = fmt::format("{}x{}/{}x{}x{}x{} {}", dim(s.batch), dim(s.heads), dim(s.kv_heads), dim(s.seq_q),
                          dim(s.seq_k), dim(s.head_dim), c.dtype.empty() ? "?" : c.dtype);
    w.not_runnable = s.seq_q ? "batch and heads not recorded (3-D inputs)"
                             : "shape not recorded (the trace needs record_shapes=True)";
    return w;
  }
  w.spec.batch = *s.batch;
  w.spec.heads = *s.heads;
  w.spec.kv_heads = *s.kv_heads;
  w.spec.seq_q = *s.seq_q;
  w.spec.seq_k = *s.seq_k;
  w.spec.head_dim = *s.head_dim;
  w.spec.causal = c.causal.value_or(false);
  w.causal_assumed = !c.causal.has_value();
  w.spec.causal_align = CausalAlign::top_left;  // PyTorch's is_causal
  w.spec.layout = Layout::bhsd;
  w.spec.device = device;
  w.label = w.spec.shape_string() + " " + (c.dtype.empty() ? "?" : c.dtype) + (w.spec.causal ? " causal" : "");
  if (c.dtype.empty()) {
    w.not_runnable = "dtype not recorded";
    return w;
  }
  w.spec.dtype = parse_dtype(c.dtype);
  return w;
}

// A call's host range: its time on a CPU trace.
std::int64_t host_ns(const AttentionCall& c) { return c.end_ns - c.start_ns; }

std::string forward_label(const std::set<std::string>& implementations) {
  if (implementations.size() == 1) return implementation_label(*implementations.begin()) + " forward attention";
  return "forward attention";
}

void add_assumptions(WhatIf& w, std::int64_t backward_calls, std::int64_t backward_ns) {
  if (w.device == Device::cpu) {
    w.assumptions.push_back(
        "times are host wall time: a step's ProfilerStep range, a call's op range, a variant's forward on this "
        "machine's CPU (the trace does not name its CPU: this one is taken to be it)");
  } else {
    w.assumptions.push_back(
        "times are GPU time, the span its work kept the GPU busy (overlapping work counted once): a step's "
        "kernels, memcpys and memsets, a step's forward calls' work, a variant's kernels per forward on this GPU");
  }
  w.assumptions.push_back(
      "each forward call's time is replaced by the variant's median at its shape (q, k, v contiguous [B, H, S, D]); "
      "the rest of the step is kept as measured, with the same overlap");
  if (backward_calls > 0)
    w.assumptions.push_back(fmt::format("backward attention ({} per step) is kept as measured: attnprof has no "
                                        "backward variants",
                                        format_duration_ns(static_cast<double>(backward_ns) /
                                                           static_cast<double>(w.steps.size()))));
  const auto assumed = std::count_if(w.shapes.begin(), w.shapes.end(),
                                     [](const WhatIfShape& s) { return s.causal_assumed && s.not_runnable.empty(); });
  if (assumed > 0)
    w.assumptions.push_back(fmt::format("causal not recorded at {} shape{}: run non-causal (the full Sq×Sk work)",
                                        assumed, assumed == 1 ? "" : "s"));
}

}  // namespace

std::size_t WhatIf::runnable_shapes() const {
  return static_cast<std::size_t>(
      std::count_if(shapes.begin(), shapes.end(), [](const WhatIfShape& s) { return s.not_runnable.empty(); }));
}

WhatIf plan_what_if(const AttentionSummary& summary, const std::vector<StepSummary>& steps, Device device) {
  WhatIf w;
  w.device = device;
  if (summary.steps.empty()) {
    w.why_not = "what-if needs ProfilerStep#N ranges to project a step's time; this trace has none";
    return w;
  }
  for (std::size_t i = 0; i < summary.steps.size() && i < steps.size(); ++i) {
    WhatIfStep step;
    step.name = summary.steps[i].name;
    step.step_ns = device == Device::cpu ? steps[i].cpu_time_ns : summary.steps[i].device_time_ns;
    if (device != Device::cpu) {  // the unions of the step's calls' work, which the step's union holds
      step.forward_ns = summary.steps[i].forward_device_time_ns;
      step.backward_ns = summary.steps[i].backward_device_time_ns;
    }
    w.steps.push_back(std::move(step));
  }
  std::map<std::string, std::size_t> by_label;  // distinct shapes, by their label
  std::set<std::string> implementations;
  std::int64_t backward_calls = 0;
  for (const AttentionCall& c : summary.calls) {
    if (c.step < 0 || static_cast<std::size_t>(c.step) >= w.steps.size()) continue;  // outside every step
    WhatIfStep& step = w.steps[static_cast<std::size_t>(c.step)];
    if (c.pass == AttentionPass::backward) {
      if (device == Device::cpu) step.backward_ns += host_ns(c);
      ++backward_calls;
      continue;
    }
    WhatIfShape shape = shape_of(c, device);
    auto [it, added] = by_label.emplace(shape.label, w.shapes.size());
    if (added) w.shapes.push_back(std::move(shape));
    ++w.shapes[it->second].calls;
    if (device == Device::cpu) step.forward_ns += host_ns(c);
    step.forward_shapes.push_back(it->second);
    implementations.insert(c.implementation);
  }
  if (w.shapes.empty()) {
    w.why_not = "what-if: no forward attention call inside a ProfilerStep#N range to replace";
    return w;
  }
  w.forward_label = forward_label(implementations);
  std::int64_t backward_ns = 0;
  for (const WhatIfStep& step : w.steps) backward_ns += step.backward_ns;
  add_assumptions(w, backward_calls, backward_ns);
  return w;
}

std::vector<WhatIfProjection> project_what_if(const WhatIf& w) {
  std::vector<WhatIfProjection> out;
  if (!w.why_not.empty()) return out;
  for (std::size_t v = 0; v < w.variants.size(); ++v) {
    WhatIfProjection p;
    p.variant = w.variants[v];
    for (std::size_t s = 0; s < w.shapes.size() && p.not_projected.empty(); ++s) {
      if (!w.shapes[s].not_runnable.empty())
        p.not_projected = fmt::format("{}: {}", w.shapes[s].label, w.shapes[s].not_runnable);
      else if (w.measures[s][v].time.count == 0)
        p.not_projected = fmt::format("refused {}: {}", w.shapes[s].label, w.measures[s][v].refusal);
    }
    if (!p.not_projected.empty()) {
      out.push_back(std::move(p));
      continue;
    }
    for (const WhatIfStep& step : w.steps) {
      WhatIfStepProjection sp;
      sp.name = step.name;
      sp.step_ns = static_cast<double>(step.step_ns);
      sp.replaced_ns = static_cast<double>(step.forward_ns);
      for (std::size_t s : step.forward_shapes) {
        const TimeStats& t = w.measures[s][v].time;
        sp.variant_ns += t.median;
        sp.variant_min_ns += t.min;
        sp.variant_max_ns += t.max;
      }
      sp.projected_ns = sp.step_ns - sp.replaced_ns + sp.variant_ns;
      const double n = static_cast<double>(w.steps.size());
      p.step_ns += sp.step_ns / n;
      p.replaced_ns += sp.replaced_ns / n;
      p.variant_ns += sp.variant_ns / n;
      p.variant_min_ns += sp.variant_min_ns / n;
      p.variant_max_ns += sp.variant_max_ns / n;
      p.projected_ns += sp.projected_ns / n;
      p.projected_min_ns += (sp.step_ns - sp.replaced_ns + sp.variant_min_ns) / n;
      p.projected_max_ns += (sp.step_ns - sp.replaced_ns + sp.variant_max_ns) / n;
      p.steps.push_back(std::move(sp));
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace attnprof::report
