#pragma once
#include <attnprof/compare.h>

#include <vector>

#include "report/glance.h"

namespace attnprof {
// One glance row per compare row (insights from each run's trace; % of the measured peak).
std::vector<report::GlanceRow> glance_rows(const std::vector<CompareRow>& rows);
}  // namespace attnprof
