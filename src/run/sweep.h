#pragma once
// Running a sweep: every point of the grid (report/sweep.h) in order, through the runner the
// caller gives (run_variant in the CLI), each point's record checkpointed as it finishes.
#include <attnprof/run.h>

#include <functional>
#include <optional>
#include <vector>

#include "report/ceilings.h"
#include "report/sweep.h"

namespace attnprof {

struct SweepHooks {
  std::function<RunResult(const RunOptions&)> run;  // run_variant in the CLI
  // A record (status "refused" or "skipped") for a point that must not run, else nullopt.
  std::function<std::optional<report::SweepRecord>(const report::SweepPoint&)> precheck;
  std::function<void(std::size_t done, std::size_t total, const report::SweepRecord&)> progress;
  std::function<void(const std::vector<report::SweepRecord>&)> checkpoint;  // writes the files after each point
};
// Runs every point in order; a UsageError from the runner (a refusal it found) is recorded as
// "refused", any other exception as "failed" with its message, and the sweep goes on.
std::vector<report::SweepRecord> run_sweep(const std::vector<report::SweepPoint>& points, const RunOptions& base,
                                           const report::Ceilings& ceilings, const SweepHooks& hooks);

}  // namespace attnprof
