#include "report/compare_glance.h"

#include "report/decode_insights.h"
#include "report/results.h"

namespace attnprof::report {

std::optional<Insight> above_ceiling_insight(const Ceilings& ceilings, const RunResult& result) {
  const std::string note = above_ceiling_note(ceilings, result.spec.dtype, result.tflops);
  if (note.empty()) return std::nullopt;
  // About the measured ranges, whose rate passes the ceiling: attn_fwd, attn_bwd, or both for a step.
  std::vector<std::string> about;
  if (result.pass != Pass::backward) about.emplace_back("attn_fwd");
  if (result.pass != Pass::forward) about.emplace_back("attn_bwd");
  return Insight{"above_ceiling", note, about};
}

std::vector<GlanceRow> glance_rows(const std::vector<CompareRow>& rows, const Ceilings& ceilings) {
  std::vector<GlanceRow> glance;
  for (const CompareRow& row : rows) {
    if (row.result) {
      glance.push_back(glance_row(*row.result, ceilings.peak_tflops(row.result->spec.dtype)));
      if (auto above = above_ceiling_insight(ceilings, *row.result)) glance.back().insights.push_back(*above);
      if (auto decode = decode_bandwidth(glance.back().insights, *row.result, ceilings))
        glance.back().insights.push_back(*decode);
    } else {
      glance.push_back(refused_row(row.variant, row.summary, row.refusal));
    }
  }
  return glance;
}

void write_compare_results(const std::string& dir, const std::string& stem, const std::vector<CompareRow>& rows,
                           const std::vector<GlanceRow>& glance, const Ceilings& ceilings, std::string_view parameter) {
  std::vector<RunResult> results;
  for (const CompareRow& row : rows) {
    if (row.result) results.push_back(*row.result);
  }
  write_compare_json(dir + "/" + stem + ".json", glance, results, ceilings, parameter);
}

std::vector<Insight> run_insights(const RunResult& result, const Ceilings& ceilings) {
  std::vector<Insight> insights = pass_insights(result, run_facts(result));  // as glance_row
  if (auto decode = decode_bandwidth(insights, result, ceilings)) insights.push_back(*decode);
  return insights;
}

}  // namespace attnprof::report
