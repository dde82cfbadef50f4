#pragma once
// What `attnprof compare` prints and writes, from its rows: the glance rows (measured rows with
// their insights, % of the measured peak of their dtype; refused rows with the reason) and
// DIR/compare_<configuration>.json for `attnprof report`.
#include <attnprof/result.h>

#include <optional>
#include <string>
#include <vector>

#include "report/ceilings.h"
#include "report/glance.h"

namespace attnprof::report {

std::vector<GlanceRow> glance_rows(const std::vector<CompareRow>& rows, const Ceilings& ceilings);

// above_ceiling for a measured row whose rate passes its dtype's matmul ceiling (above_ceiling_note),
// about the ranges the run measured (attn_fwd, attn_bwd, or both for a training step); else nullopt.
std::optional<Insight> above_ceiling_insight(const Ceilings& ceilings, const RunResult& result);

// DIR/STEM.json (atomically; STEM from compare_stem); `parameter` names the option that chose DIR.
void write_compare_results(const std::string& dir, const std::string& stem, const std::vector<CompareRow>& rows,
                           const std::vector<GlanceRow>& glance, const Ceilings& ceilings, std::string_view parameter = "out_dir");

// A run's insights as compare computes them (for `attnprof run`): pass_insights (glance.h), then
// decode_bandwidth against `ceilings`.
std::vector<Insight> run_insights(const RunResult& result, const Ceilings& ceilings);

}  // namespace attnprof::report
