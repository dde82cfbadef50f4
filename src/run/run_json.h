#pragma once
#include <attnprof/run.h>

#include <nlohmann/json.hpp>

namespace attnprof {
// The run object printed by `run --format json` and used as a row of `compare --format json`:
// the shared result keys (report/result_keys.h) plus the run's own. peak_tflops: the measured
// matmul ceiling for the run's dtype (pct_of_peak is 0 when it is 0: not measured).
nlohmann::json run_result_json(const RunResult& result, double peak_tflops);
}  // namespace attnprof
