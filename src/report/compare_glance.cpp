#include "report/compare_glance.h"

#include "report/decode_insights.h"
#include "report/results.h"

namespace attnprof::report {

std::vector<GlanceRow> glance_rows(const std::vector<CompareRow>& rows, const Ceilings& ceilings) {
  std::vector<GlanceRow> glance;
  for (const CompareRow& row : rows) {
    if (row.result) {
      glance.push_back(glance_row(*row.result, ceilings.peak_tflops(row.result->spec.dtype)));
      const std::string note = above_ceiling_note(ceilings, row.result->spec.dtype, row.result->tflops);
      // About the row's forwards (attn_fwd), whose measured rate passes the ceiling.
      if (!note.empty()) glance.back().insights.push_back(Insight{"above_ceiling", note, {"attn_fwd"}});
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
  std::vector<Insight> insights;
  if (result.trace) {
    insights = derive_insights(*result.trace, run_facts(result));
  } else if (auto nan = rules::nan_output(run_facts(result))) {
    // No trace (--no-profile): the facts alone still say when the output holds NaN.
    insights.push_back(*nan);
  }
  if (auto decode = decode_bandwidth(insights, result, ceilings)) insights.push_back(*decode);
  return insights;
}

}  // namespace attnprof::report
