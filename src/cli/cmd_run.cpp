// attnprof run: one variant, profiled, checked against fp64.
#include <attnprof/error.h>
#include <attnprof/run.h>
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/run_flags.h"
#include "core/json_dump.h"
#include "core/utf8.h"
#include "run/preflight.h"
#include "report/ceilings.h"
#include "run/ceilings_measure.h"
#include "report/compare_glance.h"
#include "report/expect.h"
#include "report/insights.h"
#include "report/time_stats_text.h"
#include "run/run_json.h"

namespace attnprof::cli {
namespace {

void print_text(const RunResult& r, double peak_tflops) {
  const AttentionSpec& s = r.spec;
  const std::string mask = !s.causal ? "non-causal"
                           : s.causal_align == CausalAlign::top_left
                               ? "causal"
                               : fmt::format("causal {}", causal_align_name(s.causal_align));
  const std::string pass = r.pass == Pass::forward ? "" : fmt::format(" (pass {})", pass_name(r.pass));
  fmt::print("{} on {}{}: {} B={} H={} Hkv={} Sq={} Sk={} D={} {} {}\n", r.variant, device_name(s.device), pass,
             dtype_name(s.dtype), s.batch, s.heads, s.kv_heads, s.seq_q, s.seq_k, s.head_dim, mask,
             layout_name(s.layout));
  const std::string per = r.pass == Pass::forward ? "forward" : r.pass == Pass::backward ? "backward" : "train step";
  fmt::print("  {:<26}{}\n", "what it runs", r.summary);
  fmt::print("  {:<26}{}  {}\n", "median time / " + per, report::median_with_spread(r.time.scaled(1e-6), per),
             r.timing_source);
  fmt::print("  {:<26}{}\n", "CPU time / " + per, report::median_with_spread(r.cpu_time.scaled(1e-6), per));
  fmt::print("  {:<26}{}  (prepare, once per shape, before the first forward)\n", "one-time setup",
             report::format_duration_ns(r.setup_ns));
  const double pct = report::pct_of_peak(r.tflops, peak_tflops);
  fmt::print("  {:<26}{}{}\n", "throughput", report::format_tflops(r.tflops),
             pct > 0 ? fmt::format("  ({:.1f}% of the measured {} matmul ceiling)", pct, dtype_name(r.spec.dtype)) : "");
  const std::string above = report::above_ceiling_note(measured_ceilings(s.device), s.dtype, r.tflops);
  if (!above.empty()) fmt::print("  {:<26}{}\n", "", above);
  fmt::print("  {:<26}{}\n", "peak extra memory", report::format_bytes(static_cast<double>(r.peak_extra_bytes)));
  fmt::print("  {:<26}{:.2e}  ({}){}\n", "error vs fp64", r.rel_err, r.err_scope,
             r.nan_only_in_masked_rows ? "  NaN in the fully masked rows only (as PyTorch's naive module)"
             : r.nan_output            ? "  OUTPUT HOLDS NaN"
                                       : "");
  if (r.pass != Pass::forward) {
    fmt::print("  {:<26}{:.2e}  (dq {:.2e}, dk {:.2e}, dv {:.2e}; {})\n", "gradient error vs fp64", r.grad_rel_err,
               r.grad_rel_err_dq, r.grad_rel_err_dk, r.grad_rel_err_dv, r.grad_err_scope);
  }
  if (r.masked_rows > 0) {
    fmt::print("  {:<26}{} rows see no key: {} all NaN, {} all zero\n", "fully masked rows", r.masked_rows,
               r.masked_rows_nan, r.masked_rows_zero);
  }
  fmt::print("  {:<26}{:g} kernels, {:g} memcpy, {:g} memset\n", "work / " + per, r.kernels_per_forward,
             r.memcpy_per_forward, r.memset_per_forward);
  if (r.determinism_runs > 0) {
    fmt::print("  {:<26}{}\n", "determinism",
               r.determinism_mismatches == 0 ? fmt::format("{} runs bit-identical", r.determinism_runs)
                                             : fmt::format("{} of {} runs differed{}", r.determinism_mismatches,
                                                           r.determinism_runs, report::differed_text(r)));
  }
  if (!r.trace_path.empty()) fmt::print("  {:<26}{}\n  {:<26}{}\n", "trace", r.trace_path, "table", r.table_path);
}

}  // namespace

Command add_run(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("run", "Run one variant under the profiler and check it against fp64");
  auto flags = std::make_shared<RunFlags>();
  flags->add_to(*sub, /*single_variant=*/true);
  return [flags]() {
    RunOptions options = flags->to_options();
    RunResult result = run_variant(options);
    const report::Ceilings& ceilings = measured_ceilings(result.spec.device);
    const double peak_tflops = ceilings.peak_tflops(result.spec.dtype);
    std::optional<report::ExpectResult> expected;
    if (!flags->expect.empty() && result.trace) {
      expected = report::compare_expect(report::parse_expect(flags->expect), *result.trace);
    }
    if (flags->format == "json") {
      nlohmann::json j = run_result_json(result, peak_tflops);
      std::vector<report::Insight> insights = report::run_insights(result, ceilings);
      if (auto above = report::above_ceiling_insight(ceilings, result)) insights.push_back(*above);
      j["insights"] = report::insights_json(insights);
      if (expected) j["expect"] = report::expect_json(*expected);
      fmt::print("{}\n", dump_json(j, 2));
    } else {
      print_text(result, peak_tflops);
      std::vector<report::Insight> insights = report::run_insights(result, ceilings);
      if (!insights.empty()) fmt::print("  what the trace revealed\n");
      for (const report::Insight& insight : insights)
        fmt::print("    {:<24}{}\n", insight.code, printable(insight.text));
      if (expected) fmt::print("\n{}", report::expect_text(*expected));
    }
    return 0;
  };
}

}  // namespace attnprof::cli
