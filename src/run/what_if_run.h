#pragma once
// `inspect --what-if`'s runs: where the trace's what-if can run (a GPU trace on this machine's GPU
// when it is the same model, a CPU trace on the CPU), and attnprof's variants run at each distinct
// forward attention shape of the trace, as `attnprof compare` runs them.
#include <attnprof/trace.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "report/what_if.h"

namespace attnprof {

struct WhatIfOptions {
  std::vector<std::string> variants;  // empty: every registered variant
  std::size_t max_shapes = 16;        // more distinct shapes than this: nothing runs, and why_not says so
};

// Plans the what-if of a trace (report::plan_what_if) and runs the variants at its shapes.
// `header` is the trace's (its deviceProperties name its GPU); `gpu_trace` whether it holds GPU
// work. A shape a variant refuses (its own check, the memory preflight) is kept with the reason.
// `on_start(variant, shape label)` is called before each run (progress).
report::WhatIf run_what_if(const trace::Trace& header, bool gpu_trace, const report::AttentionSummary& summary,
                           const std::vector<report::StepSummary>& steps, const WhatIfOptions& options,
                           const std::function<void(const std::string&, const std::string&)>& on_start = {});

}  // namespace attnprof
