#include "cli/inspect_what_if.h"

#include <attnprof/error.h>
#include <fmt/format.h>

#include <cstdio>

#include "cli/run_flags.h"

namespace attnprof::cli {

void WhatIfFlags::add_to(CLI::App& app) {
  app.add_flag("--what-if", on,
               "run attnprof's forward variants at each distinct attention shape of the trace (on this machine's "
               "GPU when it is the trace's model, on the CPU for a CPU trace) and project each step's time with them");
  app.add_option("--variants", variants, "--what-if: comma-separated variants (default: every variant)");
  app.add_option("--what-if-shapes", max_shapes,
                 "--what-if: at most this many distinct shapes are run; a trace with more runs none and says so")
      ->check(strict_integer())
      ->capture_default_str();
}

std::optional<WhatIfOptions> WhatIfFlags::to_options() const {
  if (!on) {
    if (variants) throw UsageError("--variants: needs --what-if (it picks the variants --what-if runs)");
    if (max_shapes != 16) throw UsageError("--what-if-shapes: needs --what-if (it bounds the shapes --what-if runs)");
    return std::nullopt;
  }
  if (max_shapes < 1 || max_shapes > 1000)
    throw UsageError(fmt::format("--what-if-shapes: must be 1..1000 (got {})", max_shapes));
  WhatIfOptions options;
  if (variants) options.variants = parse_variant_list(*variants);
  options.max_shapes = static_cast<std::size_t>(max_shapes);
  return options;
}

report::WhatIf inspect_what_if(const WhatIfOptions& options, const trace::Trace& header,
                               const report::Timeline& timeline, const report::AttentionSummary& attention,
                               const std::vector<report::StepSummary>& steps, bool progress) {
  const bool gpu_trace = report::has_device_work(timeline) || !header.devices.empty();
  return run_what_if(header, gpu_trace, attention, steps, options,
                     [&](const std::string& variant, const std::string& shape) {
                       if (progress) std::fprintf(stderr, "what-if: running %s at %s...\n", variant.c_str(), shape.c_str());
                     });
}

}  // namespace attnprof::cli
