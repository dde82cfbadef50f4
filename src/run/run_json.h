#pragma once
#include <attnprof/run.h>

#include <nlohmann/json.hpp>

namespace attnprof {
// The run object printed by `run --format json` and used as a row of `compare --format json`.
nlohmann::json run_result_json(const RunResult& result);
}  // namespace attnprof
