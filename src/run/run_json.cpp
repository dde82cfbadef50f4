#include "run/run_json.h"

#include <cmath>

#include "report/ceilings.h"
#include "report/result_keys.h"
#include "report/time_stats_text.h"

namespace attnprof {

nlohmann::json run_result_json(const RunResult& r, double peak_tflops) {
  const AttentionSpec& s = r.spec;
  nlohmann::json j;
  j["variant"] = r.variant;
  j["summary"] = r.summary;
  report::put_spec_keys(j, s);
  j["pass"] = std::string(pass_name(r.pass));
  j["device_ms"] = r.median_ns / 1e6;
  j["median_ms"] = r.median_ns / 1e6;  // the same number under its first name
  j["cpu_ms"] = r.cpu_ns / 1e6;
  j["time_stats"] = report::time_stats_json(r.time.scaled(1e-6));  // the samples behind median_ms
  j["cpu_time_stats"] = report::time_stats_json(r.cpu_time.scaled(1e-6));
  j["threads"] = r.threads;
  j["setup_ms"] = r.setup_ns / 1e6;
  j["peak_extra_bytes"] = r.peak_extra_bytes;
  // JSON has no NaN: an error that is NaN (NaN in rows that see a key) is null.
  j["rel_err"] = std::isfinite(r.rel_err) ? nlohmann::json(r.rel_err) : nlohmann::json(nullptr);
  j["rel_err_scope"] = r.err_scope;
  if (r.pass != Pass::forward) {  // the gradients against fp64: the worst of the three, then each
    auto number = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); };
    j["grad_rel_err"] = number(r.grad_rel_err);
    j["grad_rel_err_dq"] = number(r.grad_rel_err_dq);
    j["grad_rel_err_dk"] = number(r.grad_rel_err_dk);
    j["grad_rel_err_dv"] = number(r.grad_rel_err_dv);
    j["grad_rel_err_scope"] = r.grad_err_scope;
  }
  j["nan_output"] = r.nan_output;
  j["fully_masked_rows"] = r.masked_rows;
  if (r.masked_rows > 0) {
    j["fully_masked_rows_nan"] = r.masked_rows_nan;
    j["fully_masked_rows_zero"] = r.masked_rows_zero;
    j["nan_only_in_masked_rows"] = r.nan_only_in_masked_rows;
  }
  j["kernels_per_forward"] = report::count_json(r.kernels_per_forward);
  j["memcpy_per_forward"] = report::count_json(r.memcpy_per_forward);
  j["memset_per_forward"] = report::count_json(r.memset_per_forward);
  j["flops"] = report::flops_json(r.flops);
  j["tflops"] = r.tflops;
  j["pct_of_peak"] = report::pct_of_peak(r.tflops, peak_tflops);
  j["timing"] = r.timing_source;
  if (r.determinism_runs > 0) {
    j["determinism"] = {{"runs", r.determinism_runs}, {"bit_identical", r.determinism_mismatches == 0},
                        {"mismatches", r.determinism_mismatches}, {"differed", r.determinism_differed}};
  }
  j["trace_path"] = r.trace_path;
  if (!r.trace_path.empty()) j["trace"] = r.trace_path;
  if (!r.table_path.empty()) j["table"] = r.table_path;
  return j;
}

}  // namespace attnprof
