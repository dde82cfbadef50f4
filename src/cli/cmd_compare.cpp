// attnprof compare: every variant the device supports, one row each (the main job).
#include <attnprof/compare.h>
#include <attnprof/error.h>
#include <fmt/format.h>

#include <sys/prctl.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/parameter_flags.h"
#include "cli/round_process.h"
#include "cli/run_flags.h"
#include "core/atomic_file.h"
#include "cli/terminal.h"
#include "report/ceilings.h"
#include "run/ceilings_measure.h"
#include "report/compare_glance.h"
#include "run/trace_stem.h"

namespace attnprof::cli {

Command add_compare(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("compare", "Run every variant the device supports and compare them");
  auto flags = std::make_shared<RunFlags>();
  flags->add_to(*sub, /*single_variant=*/false);
  // Not in the help: how compare runs its later rounds, each in a fresh process of itself
  // (round_process.h). Such a process measures the round and prints its samples as JSON.
  auto round = std::make_shared<int>(0);
  auto round_variants = std::make_shared<std::string>();
  sub->add_option("--measure-round", *round, "")->group("")->check(strict_integer());
  sub->add_option("--round-variants", *round_variants, "")->group("");
  return [flags, round, round_variants]() {
    RunOptions base = flags->to_options();
    if (*round > 0) {
      prctl(PR_SET_PDEATHSIG, SIGTERM);  // the round's process ends with the compare that started it
      const std::vector<std::string> names = parse_variant_list(*round_variants);
      std::fputs(round_samples_json(names, measure_round(base, names)).c_str(), stdout);
      return 0;
    }
    bool text = flags->format == "text";
    const std::vector<std::string> names = flags->variant_list();
    // Output problems are the command's, not a variant's: one line before anything runs.
    if (!base.out_dir.empty()) check_writable_directory(base.out_dir, "--out");
    std::vector<CompareRow> rows = compare_variants(
        base, names, [&](const std::string& name) { if (text) std::fprintf(stderr, "running %s...\n", name.c_str()); },
        rounds_in_fresh_processes(base.rounds, text));
    for (CompareRow& row : rows) row.refusal = name_flags(row.refusal);
    // Nothing ran: no table and no results file, one line with each variant's reason.
    if (std::all_of(rows.begin(), rows.end(), [](const CompareRow& row) { return !row.result; })) {
      std::string reasons;
      for (const CompareRow& row : rows) {
        reasons += fmt::format("{}{}: {}", reasons.empty() ? "" : "; ", row.variant, row.refusal);
      }
      throw UsageError(fmt::format("compare: every variant refused {}: {}", base.spec.shape_string(), reasons));
    }
    std::fputs(render_compare(rows, text ? CompareFormat::text : CompareFormat::json, terminal_width()).c_str(), stdout);
    if (!base.out_dir.empty()) {  // DIR/compare_....json: what `attnprof report DIR` draws
      const report::Ceilings& ceilings = measured_ceilings(base.spec.device);
      const std::string stem = compare_stem(base, flags->variants ? names : std::vector<std::string>{});
      report::write_compare_results(base.out_dir, stem, rows, report::glance_rows(rows, ceilings), ceilings, "--out");
      if (text) std::fprintf(stderr, "traces, tables and %s.json in %s/\n", stem.c_str(), base.out_dir.c_str());
    }
    return 0;
  };
}

}  // namespace attnprof::cli
