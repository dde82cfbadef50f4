// The text and JSON of `inspect --what-if` (report/what_if.h).
#include <fmt/format.h>

#include "core/json_dump.h"
#include "report/insights.h"
#include "report/time_stats_text.h"
#include "report/what_if.h"

namespace attnprof::report {
namespace {

std::string change_text(double from, double to) {
  if (from <= 0) return "n/a";
  const double pct = 100.0 * (to - from) / from;
  return fmt::format("{}{:.0f}%", pct < 0 ? "\u2212" : "+", pct < 0 ? -pct : pct);
}

std::string projection_line(const WhatIf& w, const WhatIfProjection& p) {
  if (!p.not_projected.empty()) return fmt::format("  {}: not projected: {}\n", p.variant, p.not_projected);
  return fmt::format("  {} {}/step \u2192 {} {} ({}\u2013{}): step {} \u2192 {} ({})\n", w.forward_label,
                     format_duration_ns(p.replaced_ns), p.variant, format_duration_ns(p.variant_ns),
                     format_duration_ns(p.variant_min_ns), format_duration_ns(p.variant_max_ns),
                     format_duration_ns(p.step_ns), format_duration_ns(p.projected_ns),
                     change_text(p.step_ns, p.projected_ns));
}

// "at 8x4x256x64 bf16 causal (4 calls per step): naive 48.8 µs, flash 6.1 µs, cudnn refused"
std::string shape_line(const WhatIf& w, std::size_t s) {
  const WhatIfShape& shape = w.shapes[s];
  const double per_step = static_cast<double>(shape.calls) / static_cast<double>(w.steps.size());
  std::string line = fmt::format("  at {} ({:.4g} call{} per step):", shape.label, per_step, per_step == 1 ? "" : "s");
  if (!shape.not_runnable.empty()) return line + " not run: " + shape.not_runnable + "\n";
  for (std::size_t v = 0; v < w.variants.size(); ++v) {
    const WhatIfMeasure& m = w.measures[s][v];
    line += fmt::format("{} {} {}", v ? "," : "", w.variants[v],
                        m.time.count ? format_duration_ns(m.time.median) : std::string("refused"));
  }
  return line + "\n";
}

nlohmann::json opt_string(const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); }

nlohmann::json shape_json(const WhatIf& w, std::size_t s) {
  const WhatIfShape& shape = w.shapes[s];
  nlohmann::json j = {{"label", shape.label}, {"calls", shape.calls}, {"not_runnable", opt_string(shape.not_runnable)}};
  if (shape.not_runnable.empty()) {
    const AttentionSpec& spec = shape.spec;
    j.update({{"batch", spec.batch}, {"heads", spec.heads}, {"kv_heads", spec.kv_heads}, {"seq_q", spec.seq_q},
              {"seq_k", spec.seq_k}, {"head_dim", spec.head_dim}, {"dtype", std::string(dtype_name(spec.dtype))},
              {"causal", spec.causal}, {"causal_assumed", shape.causal_assumed}});
    nlohmann::json runs = nlohmann::json::array();
    for (std::size_t v = 0; v < w.variants.size(); ++v) {
      const WhatIfMeasure& m = w.measures[s][v];
      runs.push_back({{"variant", w.variants[v]},
                      {"refusal", m.time.count ? nlohmann::json(nullptr) : nlohmann::json(m.refusal)},
                      {"time_stats", time_stats_json(m.time.scaled(1e-6))}});
    }
    j["variants"] = std::move(runs);
  }
  return j;
}

nlohmann::json projection_json(const WhatIfProjection& p) {
  nlohmann::json j = {{"variant", p.variant}, {"not_projected", opt_string(p.not_projected)}};
  if (!p.not_projected.empty()) return j;
  nlohmann::json steps = nlohmann::json::array();
  for (const WhatIfStepProjection& s : p.steps)
    steps.push_back({{"name", s.name},
                     {"step_us", s.step_ns / 1e3},
                     {"replaced_attention_us", s.replaced_ns / 1e3},
                     {"attention_us", s.variant_ns / 1e3},
                     {"projected_step_us", s.projected_ns / 1e3}});
  j.update({{"step_us", p.step_ns / 1e3},
            {"replaced_attention_us", p.replaced_ns / 1e3},
            {"attention_us", p.variant_ns / 1e3},
            {"attention_min_us", p.variant_min_ns / 1e3},
            {"attention_max_us", p.variant_max_ns / 1e3},
            {"projected_step_us", p.projected_ns / 1e3},
            {"projected_step_min_us", p.projected_min_ns / 1e3},
            {"projected_step_max_us", p.projected_max_ns / 1e3},
            {"change", p.step_ns > 0 ? (p.projected_ns - p.step_ns) / p.step_ns : 0.0},
            {"steps", std::move(steps)}});
  return j;
}

}  // namespace

std::string what_if_text(const WhatIf& w) {
  if (!w.why_not.empty()) return w.why_not + "\n";
  std::string out = fmt::format("what-if: attnprof's variants at the trace's {} forward shape{} on {} (mean of {} step{}):\n",
                                w.shapes.size(), w.shapes.size() == 1 ? "" : "s", w.where, w.steps.size(),
                                w.steps.size() == 1 ? "" : "s");
  for (const WhatIfProjection& p : project_what_if(w)) out += projection_line(w, p);
  for (std::size_t s = 0; s < w.shapes.size(); ++s) out += shape_line(w, s);
  for (const std::string& a : w.assumptions) out += "  assumes: " + a + "\n";
  return out;
}

std::string what_if_json(const WhatIf& w) {
  nlohmann::json j = {{"ran", w.why_not.empty()}, {"why_not", opt_string(w.why_not)}};
  if (w.why_not.empty()) {
    nlohmann::json steps = nlohmann::json::array();
    for (const WhatIfStep& s : w.steps)
      steps.push_back({{"name", s.name},
                       {"step_us", static_cast<double>(s.step_ns) / 1e3},
                       {"forward_attention_us", static_cast<double>(s.forward_ns) / 1e3},
                       {"backward_attention_us", static_cast<double>(s.backward_ns) / 1e3},
                       {"forward_calls", s.forward_shapes.size()}});
    nlohmann::json shapes = nlohmann::json::array();
    for (std::size_t s = 0; s < w.shapes.size(); ++s) shapes.push_back(shape_json(w, s));
    nlohmann::json projections = nlohmann::json::array();
    for (const WhatIfProjection& p : project_what_if(w)) projections.push_back(projection_json(p));
    j.update({{"device", std::string(device_name(w.device))},
              {"where", w.where},
              {"forward_label", w.forward_label},
              {"steps", std::move(steps)},
              {"shapes", std::move(shapes)},
              {"variants", std::move(projections)},
              {"assumptions", w.assumptions}});
  }
  return dump_json(j);
}

}  // namespace attnprof::report
