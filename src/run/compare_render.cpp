#include <attnprof/compare.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <utility>

#include "core/json_dump.h"
#include "report/ceilings.h"
#include "run/ceilings_measure.h"
#include "report/compare_glance.h"
#include "report/glance.h"
#include "report/ranking.h"
#include "run/run_json.h"

namespace attnprof {

std::string render_compare(const std::vector<CompareRow>& rows, CompareFormat format, int width) {
  Device device = Device::cpu;
  const RunResult* first = nullptr;
  std::pair<std::int64_t, std::int64_t> counts{0, 0};  // the fewest and most forwards of a row
  for (const CompareRow& row : rows) {
    if (!row.result) continue;
    device = row.result->spec.device;
    const std::int64_t count = row.result->time.count;
    counts = first == nullptr ? std::pair{count, count}
                              : std::pair{std::min(counts.first, count), std::max(counts.second, count)};
    if (first == nullptr) first = &*row.result;
  }
  const report::Ceilings& ceilings = measured_ceilings(device);
  std::vector<report::GlanceRow> glance = report::glance_rows(rows, ceilings);
  if (format == CompareFormat::text) {
    return report::glance_text(glance, width, first ? report::table_header(*first, ceilings.device_name, counts) : "");
  }
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
  const report::Ranking ranking = report::rank_rows(glance);
  out["ranking"] = {{"fastest", ranking.fastest}, {"sentence", ranking.sentence}};
  return dump_json(out, 2) + "\n";
}

}  // namespace attnprof
