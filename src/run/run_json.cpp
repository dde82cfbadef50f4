#include "run/run_json.h"

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
  j["layout"] = std::string(layout_name(s.layout));
  j["median_ms"] = r.median_ns / 1e6;
  j["cpu_ms"] = r.cpu_ns / 1e6;
  j["peak_extra_bytes"] = r.peak_extra_bytes;
  j["rel_err"] = r.rel_err;
  j["rel_err_scope"] = r.err_scope;
  j["nan_output"] = r.nan_output;
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
