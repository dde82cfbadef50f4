#pragma once
// How `inspect` shows the attention calls of a trace: a lead line per trace (attention's GPU time
// per step, its share, forward and backward), a table of the distinct calls, and the JSON object
// "attention": {"steps": [...], "calls": [...]}.
#include <string>

#include "report/attention_calls.h"

namespace attnprof::report {

// Empty when the trace has no attention call.
std::string attention_text(const AttentionSummary& summary);
// {"steps": [...], "calls": [...]} (empty arrays when there is no attention call).
std::string attention_json(const AttentionSummary& summary);

}  // namespace attnprof::report
