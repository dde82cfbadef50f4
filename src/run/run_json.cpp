#include "run/run_json.h"

#include <cmath>

#include "report/time_stats_text.h"

namespace attnprof {

nlohmann::json run_result_json(const RunResult& r) {
  const AttentionSpec& s = r.spec;
  nlohmann::json j;
  j["variant"] = r.variant;
  j["device"] = std::string(device_name(s.device));
  j["dtype"] = std::string(dtype_name(s.dtype));
  j["batch"] = s.batch;
  j["heads"] = s.heads;
  j["kv_heads"] = s.kv_heads;
  j["seq"] = s.seq_q;
  j["seq_k"] = s.seq_k;
  j["head_dim"] = s.head_dim;
  j["causal"] = s.causal;
  if (s.causal) j["causal_align"] = std::string(causal_align_name(s.causal_align));
  j["layout"] = std::string(layout_name(s.layout));
  j["median_ms"] = r.median_ns / 1e6;
  j["cpu_ms"] = r.cpu_ns / 1e6;
  j["time_stats"] = report::time_stats_json(r.time.scaled(1e-6));  // the samples behind median_ms
  j["cpu_time_stats"] = report::time_stats_json(r.cpu_time.scaled(1e-6));
  j["threads"] = r.threads;
  j["setup_ms"] = r.setup_ns / 1e6;
  j["peak_extra_bytes"] = r.peak_extra_bytes;
  // JSON has no NaN: an error that is NaN (NaN in rows that see a key) is null.
  j["rel_err"] = std::isfinite(r.rel_err) ? nlohmann::json(r.rel_err) : nlohmann::json(nullptr);
  j["rel_err_scope"] = r.err_scope;
  j["nan_output"] = r.nan_output;
  j["fully_masked_rows"] = r.masked_rows;
  if (r.masked_rows > 0) {
    j["fully_masked_rows_nan"] = r.masked_rows_nan;
    j["fully_masked_rows_zero"] = r.masked_rows_zero;
    j["nan_only_in_masked_rows"] = r.nan_only_in_masked_rows;
  }
  j["kernels_per_forward"] = r.kernels_per_forward;
  j["memcpy_per_forward"] = r.memcpy_per_forward;
  j["memset_per_forward"] = r.memset_per_forward;
  j["flops"] = r.flops;
  j["tflops"] = r.tflops;
  j["timing"] = r.timing_source;
  if (r.determinism_runs > 0) {
    j["determinism"] = {{"runs", r.determinism_runs}, {"bit_identical", r.determinism_mismatches == 0},
                        {"mismatches", r.determinism_mismatches}};
  }
  if (!r.trace_path.empty()) j["trace"] = r.trace_path;
  if (!r.table_path.empty()) j["table"] = r.table_path;
  return j;
}

}  // namespace attnprof
