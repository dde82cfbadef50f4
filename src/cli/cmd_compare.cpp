// attnprof compare: every variant the device supports, one row each (the main job).
#include <attnprof/compare.h>
#include <attnprof/error.h>
#include <attnprof/run.h>
#include <attnprof/variant.h>
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/run_flags.h"
#include "run/preflight.h"
#include "run/run_json.h"

namespace attnprof::cli {
namespace {

void print_table(const std::vector<CompareRow>& rows) {
  fmt::print("{:<10} {:>11} {:>10} {:>10} {:>9} {:>12} {:>10}  {}\n", "variant", "work/fwd", "time/fwd", "CPU/fwd",
             "GFLOP/s", "peak extra", "err fp64", "");
  for (const CompareRow& row : rows) {
    if (!row.result) {
      fmt::print("{:<10} refused: {}\n", row.variant, row.refusal);
      continue;
    }
    const RunResult& r = *row.result;
    std::string work = fmt::format("{:g}k {:g}c", r.kernels_per_forward, r.memcpy_per_forward);
    fmt::print("{:<10} {:>11} {:>8.3f}ms {:>8.3f}ms {:>9.1f} {:>12} {:>10.2e}  {}\n", r.variant, work,
               r.median_ns / 1e6, r.cpu_ns / 1e6, r.median_ns > 0 ? r.flops / r.median_ns : 0.0,
               format_bytes(r.peak_extra_bytes), r.rel_err, r.summary);
  }
}

}  // namespace

Command add_compare(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("compare", "Run every variant the device supports and compare them");
  auto flags = std::make_shared<RunFlags>();
  flags->add_to(*sub, /*single_variant=*/false);
  return [flags]() {
    RunOptions base = flags->to_options();
    std::vector<CompareRow> rows = compare_variants(base, flags->variant_list(), [&](const std::string& name) {
      if (flags->format == "text") std::fprintf(stderr, "running %s...\n", name.c_str());
    });
    if (flags->format == "json") {
      nlohmann::json out;
      out["rows"] = nlohmann::json::array();
      for (const CompareRow& row : rows) {
        if (row.result) {
          out["rows"].push_back(run_result_json(*row.result));
        } else {
          out["rows"].push_back({{"variant", row.variant}, {"refused", row.refusal}});
        }
      }
      fmt::print("{}\n", out.dump(2));
    } else {
      print_table(rows);
    }
    return 0;
  };
}

}  // namespace attnprof::cli
