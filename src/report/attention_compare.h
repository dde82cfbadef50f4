#pragma once
// Attention across traces: one trace's attention and step GPU time as means per step
// (AttentionTotals), two traces side by side (`inspect BEFORE AFTER --diff`) and the ranks of
// one job (`inspect rank0.json.gz rank1.json.gz ...`), text and JSON.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "report/attention_calls.h"

namespace attnprof::report {

// Means per ProfilerStep#N; a trace without steps gives the whole trace's attention and no step
// time. Calls outside every step are left out when the trace has steps, as in the lead line.
struct AttentionTotals {
  std::size_t steps = 0;
  std::optional<double> step_device_ns;  // the step's GPU time (union of its kernels, memcpys, memsets)
  // Unions of the calls' work, as AttentionStep's (forward and backward may overlap each other)
  double attention_ns = 0, forward_ns = 0, backward_ns = 0;
  double forward_calls = 0, backward_calls = 0;
  // GPU ops (kernels, memcpys, memsets) per call; empty without calls of that pass
  std::optional<double> forward_ops_per_call, backward_ops_per_call;
  std::vector<std::string> implementations;  // distinct AttentionCall::implementation, sorted
  std::optional<double> share() const;       // attention_ns / step_device_ns
};

AttentionTotals attention_totals(const AttentionSummary& summary);

// --diff: BEFORE and AFTER side by side with the change.
std::string attention_diff_text(const std::string& before_trace, const AttentionTotals& before,
                                const std::string& after_trace, const AttentionTotals& after);
// {"before": {...}, "after": {...}, "change": {...}}
std::string attention_diff_json(const std::string& before_trace, const AttentionTotals& before,
                                const std::string& after_trace, const AttentionTotals& after);

struct RankInput {
  std::string trace;
  std::optional<std::int64_t> recorded_rank;  // the trace's distributedInfo rank, when it has one
  AttentionTotals totals;
};

// The per-rank table. Ranks come from distributedInfo when every trace has a rank there and no two
// share one; else from the file order, and the table says why. The slowest rank is the one with
// the most step GPU time (traces without ProfilerStep#N ranges are not ranked).
std::string ranks_text(const std::vector<RankInput>& inputs);
// {"source": "distributedInfo" | "file order", "note", "rows": [...], "slowest", "fastest"}
std::string ranks_json(const std::vector<RankInput>& inputs);

}  // namespace attnprof::report
