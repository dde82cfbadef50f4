#pragma once
// `inspect --what-if`: its flags, and the runs for one trace inspect has read.
#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

#include "report/attention_calls.h"
#include "report/steps.h"
#include "report/timeline.h"
#include "report/what_if.h"
#include "run/what_if_run.h"

namespace attnprof::cli {

struct WhatIfFlags {
  bool on = false;
  std::optional<std::string> variants;  // compare's --variants list
  int max_shapes = 16;

  void add_to(CLI::App& app);
  // nullopt without --what-if; throws UsageError naming the flag for a bad list or count, or for
  // --variants / --what-if-shapes without --what-if.
  std::optional<WhatIfOptions> to_options() const;
};

// Runs the what-if of one trace: `header` is the Trace its reader filled (deviceProperties),
// `timeline` its events. Progress lines go to stderr when `progress`.
report::WhatIf inspect_what_if(const WhatIfOptions& options, const trace::Trace& header,
                               const report::Timeline& timeline, const report::AttentionSummary& attention,
                               const std::vector<report::StepSummary>& steps, bool progress);

}  // namespace attnprof::cli
