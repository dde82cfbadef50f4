#include "run/compare_render.h"

#include <attnprof/variant.h>

#include <nlohmann/json.hpp>

#include "report/ceilings.h"
#include "report/glance.h"
#include "run/run_json.h"

namespace attnprof {

std::vector<report::GlanceRow> glance_rows(const std::vector<CompareRow>& rows) {
  std::vector<report::GlanceRow> glance;
  for (const CompareRow& row : rows) {
    if (!row.result) {
      Variant* variant = find_variant(row.variant);
      glance.push_back(report::refused_row(row.variant, variant ? std::string(variant->summary()) : "", row.refusal));
      continue;
    }
    double peak = report::measured_ceilings(row.result->spec.device).matmul_tflops;
    glance.push_back(report::glance_row(*row.result, peak));
  }
  return glance;
}

std::string render_compare(const std::vector<CompareRow>& rows, CompareFormat format) {
  std::vector<report::GlanceRow> glance = glance_rows(rows);
  if (format == CompareFormat::text) return report::glance_text(glance);
  // The glance row's keys, plus the run object's (shape, dtype, median_ms, timing, ...).
  nlohmann::json out = report::glance_json(glance);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i].result) continue;
    const nlohmann::json run = run_result_json(*rows[i].result);  // items() must not outlive it
    for (auto& [key, value] : run.items()) {
      if (!out["rows"][i].contains(key)) out["rows"][i][key] = value;
    }
  }
  return out.dump(2) + "\n";
}

}  // namespace attnprof
