#include "run/sweep.h"

#include <attnprof/error.h>

#include <exception>
#include <new>

namespace attnprof {

using report::record_from_result;
using report::record_not_run;
using report::SweepPoint;
using report::SweepRecord;

std::vector<SweepRecord> run_sweep(const std::vector<SweepPoint>& points, const RunOptions& base,
                                   const report::Ceilings& ceilings, const SweepHooks& hooks) {
  std::vector<SweepRecord> records;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const SweepPoint& p = points[i];
    SweepRecord record;
    std::optional<SweepRecord> not_run = hooks.precheck ? hooks.precheck(p) : std::nullopt;
    if (not_run) {
      record = *not_run;
    } else {
      RunOptions options = base;
      options.spec = p.spec;
      options.variant = p.variant;
      try {
        record = record_from_result(p, hooks.run(options), ceilings);
      } catch (const UsageError& e) {
        record = record_not_run(p, "refused", e.what());
      } catch (const std::bad_alloc&) {
        record = record_not_run(p, "failed", "out of memory");
      } catch (const std::exception& e) {
        record = record_not_run(p, "failed", e.what());
      }
    }
    records.push_back(record);
    if (hooks.checkpoint) hooks.checkpoint(records);
    if (hooks.progress) hooks.progress(i + 1, points.size(), record);
  }
  return records;
}

}  // namespace attnprof
