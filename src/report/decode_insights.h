#pragma once
// The split-KV decode path's bandwidth against the measured copy ceiling: a fact of a run and the
// ceilings, added beside the trace's insights (rules::split_kv_decode, insights.h) by compare's
// glance rows and `attnprof run`.
#include <attnprof/result.h>

#include <optional>
#include <vector>

#include "report/ceilings.h"
#include "report/insights.h"

namespace attnprof::report {

// decode_bandwidth: when `insights` hold split_kv_decode, the run's K/V bytes per forward
// (decode_kv_bytes) over its median device time, against the copy ceiling (read + write bytes per
// second: HBM's usable bandwidth either way). nullopt without that insight, a time or a ceiling.
std::optional<Insight> decode_bandwidth(const std::vector<Insight>& insights, const RunResult& result,
                                        const Ceilings& ceilings);

}  // namespace attnprof::report
