#pragma once
// Reading, writing and explaining traces from a program: the same code `attnprof inspect` runs.
#include <attnprof/trace.h>

#include <string>
#include <vector>

namespace attnprof {

// A Kineto/Chrome trace (.json or .json.gz; PyTorch's or attnprof's). Throws UsageError naming
// the file and the problem for a missing, truncated or malformed one.
trace::Trace read_trace(const std::string& path);
// Written atomically; gzipped when the path ends in .gz.
void write_trace(const std::string& path, const trace::Trace& trace);

// torch.profiler's key_averages table as text (docs/tables.md). An empty sort_by sorts by device
// time when the trace has device work, else by CPU time; row_limit -1 shows every row.
std::string key_averages_table(const trace::Trace& trace, const std::string& sort_by = "", int row_limit = -1);

// What the trace revealed: the insight rules of docs/insights.md, each a stable code and a sentence.
struct TraceInsight {
  std::string code;
  std::string text;
};
std::vector<TraceInsight> trace_insights(const trace::Trace& trace);

}  // namespace attnprof
