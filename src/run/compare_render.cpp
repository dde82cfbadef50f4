#include <attnprof/compare.h>

#include <nlohmann/json.hpp>

#include "report/ceilings.h"
#include "report/compare_glance.h"
#include "report/glance.h"
#include "run/run_json.h"

namespace attnprof {

std::string render_compare(const std::vector<CompareRow>& rows, CompareFormat format) {
  Device device = Device::cpu;
  for (const CompareRow& row : rows) {
    if (row.result) device = row.result->spec.device;
  }
  const report::Ceilings& ceilings = report::measured_ceilings(device);
  std::vector<report::GlanceRow> glance = report::glance_rows(rows, ceilings);
  if (format == CompareFormat::text) return report::glance_text(glance);
  // The glance row's keys, plus the run object's (shape, dtype, median_ms, timing, ...).
  nlohmann::json out = report::glance_json(glance);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i].result) continue;
    // items() must not outlive it
    const nlohmann::json run = run_result_json(*rows[i].result, ceilings.peak_tflops(rows[i].result->spec.dtype));
    for (auto& [key, value] : run.items()) {
      if (!out["rows"][i].contains(key)) out["rows"][i][key] = value;
    }
  }
  return out.dump(2) + "\n";
}

}  // namespace attnprof
