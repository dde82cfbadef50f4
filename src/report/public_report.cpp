// include/attnprof/report.h over the trace reader/writer and the report functions.
#include <attnprof/report.h>

#include "report/insights.h"
#include "report/key_averages.h"
#include "report/steps.h"
#include "trace/reader.h"
#include "trace/writer.h"

namespace attnprof {

trace::Trace read_trace(const std::string& path) { return trace::read_trace_file(path); }

void write_trace(const std::string& path, const trace::Trace& trace) { trace::write_trace_file(path, trace); }

std::string key_averages_table(const trace::Trace& trace, const std::string& sort_by, int row_limit) {
  std::string order = sort_by;
  if (order.empty()) order = report::has_device_work(trace) ? "device_time_total" : "cpu_time_total";
  return report::render_text(report::key_averages(trace, order, row_limit));
}

std::vector<TraceInsight> trace_insights(const trace::Trace& trace) {
  std::vector<TraceInsight> out;
  for (const report::Insight& insight : report::derive_insights(trace, {})) out.push_back({insight.code, insight.text});
  return out;
}

}  // namespace attnprof
