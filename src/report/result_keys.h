#pragma once
// The keys every result row carries, with the same names and JSON types, in `run --format json`,
// `compare --format json` (and compare's results file) and sweep's JSON / CSV (docs/report.md,
// "One result schema").
#include <attnprof/attention.h>
#include <nlohmann/json.hpp>


namespace attnprof::report {

// device, dtype, batch, heads, kv_heads, seq, seq_k, head_dim, causal, causal_align, layout.
void put_spec_keys(nlohmann::json& row, const AttentionSpec& spec);
// A count per forward: an integer when every forward did the same (the usual case), else the mean.
nlohmann::json count_json(double count);
// An analytic FLOP count is a whole number: written as an integer, exact in JSON and CSV.
nlohmann::json flops_json(double flops);

}  // namespace attnprof::report
