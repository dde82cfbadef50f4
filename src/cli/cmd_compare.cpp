// attnprof compare: every variant the device supports, one row each (the main job).
#include <attnprof/compare.h>
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/run_flags.h"
#include "cli/terminal.h"
#include "report/ceilings.h"
#include "report/compare_glance.h"

namespace attnprof::cli {

Command add_compare(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("compare", "Run every variant the device supports and compare them");
  auto flags = std::make_shared<RunFlags>();
  flags->add_to(*sub, /*single_variant=*/false);
  return [flags]() {
    RunOptions base = flags->to_options();
    bool text = flags->format == "text";
    std::vector<CompareRow> rows = compare_variants(base, flags->variant_list(), [&](const std::string& name) {
      if (text) std::fprintf(stderr, "running %s...\n", name.c_str());
    });
    std::fputs(render_compare(rows, text ? CompareFormat::text : CompareFormat::json, terminal_width()).c_str(), stdout);
    if (!base.out_dir.empty()) {  // DIR/compare.json: what `attnprof report DIR` draws
      const report::Ceilings& ceilings = report::measured_ceilings(base.spec.device);
      report::write_compare_results(base.out_dir, rows, report::glance_rows(rows, ceilings), ceilings, "--out");
      if (text) std::fprintf(stderr, "traces, tables and compare.json in %s/\n", base.out_dir.c_str());
    }
    return 0;
  };
}

}  // namespace attnprof::cli
