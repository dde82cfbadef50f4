#include "run/what_if_run.h"

#include <attnprof/compare.h>
#include <attnprof/error.h>
#include <attnprof/variant.h>
#include <fmt/format.h>

#include <set>

#include "ops/backend.h"

namespace attnprof {
namespace {

// Why this machine cannot run a GPU trace's what-if ("" when its GPU is the trace's model, and
// then `where` names it).
std::string gpu_mismatch(const trace::Trace& header, std::string& where) {
  std::set<std::string> names;
  for (const trace::DeviceProperties& d : header.devices)
    if (!d.name.empty()) names.insert(d.name);
  if (names.empty()) return "what-if needs the trace's GPU model to match this machine's; its deviceProperties name none";
  std::string wanted;
  for (const std::string& name : names) wanted += (wanted.empty() ? "" : " or ") + name;
  if (auto why = ops::unavailable_reason(Device::cuda))
    return fmt::format("what-if needs the trace's GPU ({}) here; this machine has none: {}", wanted, *why);
  std::string local;
  try {
    local = ops::backend(Device::cuda).model_name();
  } catch (const Error& e) {
    return fmt::format("what-if needs the trace's GPU ({}) here; this machine's GPU cannot be used ({})", wanted,
                       e.what());
  }
  if (names.count(local) == 0)
    return fmt::format("what-if needs the trace's GPU ({}) here; this machine has {}", wanted, local);
  where = "this machine's " + local;
  return {};
}

}  // namespace

report::WhatIf run_what_if(const trace::Trace& header, bool gpu_trace, const report::AttentionSummary& summary,
                           const std::vector<report::StepSummary>& steps, const WhatIfOptions& options,
                           const std::function<void(const std::string&, const std::string&)>& on_start) {
  report::WhatIf w = report::plan_what_if(summary, steps, gpu_trace ? Device::cuda : Device::cpu);
  if (!w.why_not.empty()) return w;
  if (gpu_trace) {
    w.why_not = gpu_mismatch(header, w.where);
    if (!w.why_not.empty()) return w;
  } else {
    w.where = "this machine's CPU";
  }
  if (w.runnable_shapes() > options.max_shapes) {
    w.why_not = fmt::format("what-if: the trace has {} distinct forward attention shapes, over --what-if-shapes {}; "
                            "raise it to run them all",
                            w.runnable_shapes(), options.max_shapes);
    return w;
  }
  w.variants = options.variants;
  if (w.variants.empty())
    for (Variant* v : all_variants()) w.variants.emplace_back(v->name());
  w.measures.assign(w.shapes.size(), std::vector<report::WhatIfMeasure>(w.variants.size()));
  for (std::size_t s = 0; s < w.shapes.size(); ++s) {
    const report::WhatIfShape& shape = w.shapes[s];
    if (!shape.not_runnable.empty()) continue;
    RunOptions base;
    base.spec = shape.spec;
    base.out_dir.clear();  // the measurements only: no trace or table files
    std::vector<CompareRow> rows = compare_variants(base, w.variants, [&](const std::string& variant) {
      if (on_start) on_start(variant, shape.label);
    });
    for (std::size_t v = 0; v < rows.size(); ++v)
      w.measures[s][v] = {rows[v].result ? rows[v].result->time : TimeStats{}, rows[v].refusal};
  }
  return w;
}

}  // namespace attnprof
