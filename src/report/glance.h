#pragma once
// The "at a glance" table (the blog's closing table, measured): one row per variant with its
// work per forward, times with their spread, memory, throughput against the measured peak, error,
// and what the trace revealed. Text for a terminal of a given width and JSON for tools and the report.
#include <attnprof/result.h>
#include <attnprof/time_stats.h>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "report/insights.h"

namespace attnprof::report {

struct GlanceRow {
  std::string variant;
  std::string summary;               // what it does, one line
  std::optional<std::string> refusal;  // set: the variant refused the spec; the numbers are absent
  double kernels_per_forward = 0;
  double memcpy_per_forward = 0;
  double memset_per_forward = 0;
  double device_ms = 0;              // per forward (device time on the GPU, wall time on the CPU)
  double cpu_ms = 0;                 // CPU time per forward
  TimeStats time;                    // the samples behind device_ms, in ms (count, spread)
  TimeStats cpu_time;                // the samples behind cpu_ms, in ms
  double setup_ms = 0;               // once per shape, before the first forward (RunResult::setup_ns)
  std::int64_t peak_extra_bytes = 0;
  double tflops = 0;
  double pct_of_peak = 0;            // of the measured matmul ceiling; 0 when none was measured
  double rel_err = 0;  // over the rows that see a key
  bool nan_output = false;
  // Rows that see no key (causal bottom-right, Sq > Sk), how many came out all NaN, and whether
  // those are the only NaN (PyTorch's naive behaviour: the error column then shows a number).
  std::int64_t masked_rows = 0;
  std::int64_t masked_rows_nan = 0;
  bool nan_only_in_masked_rows = false;
  // Backward and train rows: the worst of dQ, dK, dV against fp64 (NaN when one holds NaN).
  std::optional<double> grad_rel_err;
  std::vector<Insight> insights;
  std::string trace_path;
};

// Facts of a run as the insight rules take them.
RunFacts run_facts(const RunResult& result);
// " (dk, dv)": what differed over a run's determinism runs (RunResult::determinism_differed), "" when
// nothing did.
std::string differed_text(const RunResult& result);
// A run's insights from its trace: a forward run's from every rule (derive_insights), a backward or
// train run's from the backward's rules (derive_backward_insights: attn_bwd); nan_output from the
// facts alone when there is no trace (--no-profile) or the pass is not a forward.
std::vector<Insight> pass_insights(const RunResult& result, const RunFacts& facts);
// A measured row; insights come from result.trace (none when the run kept no trace).
// peak_tflops: the measured matmul ceiling for the run's dtype (Ceilings::peak_tflops), 0 if none.
GlanceRow glance_row(const RunResult& result, double peak_tflops);
GlanceRow refused_row(std::string variant, std::string summary, std::string reason);

// "1×4×512×64 (B×H×S×D) fp32 bhsd causal · device: cpu, <model> · 2 threads · median of 10
// forwards": what every row ran on; a backward or train run says "· pass backward" after the mask
// and counts "backwards" or "training steps". counts: the fewest and most of them a row's median
// is of ("medians of 267–1000 forwards" when the rows differ, as --min-time makes them).
std::string table_header(const RunResult& result, const std::string& device_name,
                         std::pair<std::int64_t, std::int64_t> counts);
// `header`, then one line per variant (the columns that fit in `width`: variant, median ms and
// its min–max spread first, then TFLOP/s, %peak, error, kernels, CPU ms, extra memory, memcpy,
// memset; "grad err" after err when a row has a gradient error), then the ranking sentence and every insight once, naming the rows it came from,
// wrapped to `width`. No line is wider than `width` unless the three first columns or a single
// word are.
std::string glance_text(const std::vector<GlanceRow>& rows, int width = 100, const std::string& header = "");
// {"rows": [{"variant", "kernels_per_forward", "memcpy_per_forward", "memset_per_forward",
//   "device_ms", "cpu_ms", "time_stats", "cpu_time_stats" ({"count", "median_ms", "min_ms", "max_ms",
//   "p10_ms", "p90_ms"}), "peak_extra_bytes", "tflops", "pct_of_peak", "rel_err",
//   "insights": [{"code", "text", "about"}]}]} — plus "summary", "nan_output", "fully_masked_rows",
// "fully_masked_rows_nan", "nan_only_in_masked_rows", "trace_path", "setup_ms", "grad_rel_err" (backward and
// train rows; null when NaN) and, for a refusal, "refused"
// with the reason and null numbers. rel_err is null when it is undefined (NaN in a defined row).
nlohmann::json glance_json(const std::vector<GlanceRow>& rows);
nlohmann::json glance_row_json(const GlanceRow& row);
GlanceRow glance_row_from_json(const nlohmann::json& row);  // throws Error naming the missing key

// Greedy word wrap to `width` columns (UTF-8 aware: counts code points).
std::vector<std::string> wrap_text(const std::string& text, std::size_t width);
std::size_t display_width(const std::string& text);

}  // namespace attnprof::report
