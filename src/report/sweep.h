#pragma once
// A sweep's points and records: run_variant over a grid of sequence lengths, head dims and
// variants (run/sweep.h runs it). Each finished point rewrites the CSV and JSON files whole
// (atomically), so an interrupted sweep leaves complete files holding every point done so far.
// A point whose memory estimate exceeds what is free is skipped with the reason instead of being
// run into the OOM killer.
#include <attnprof/result.h>
#include <attnprof/time_stats.h>

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "report/ceilings.h"

namespace attnprof::report {

// The most points one sweep runs (sequence lengths × head dims × variants), and so the most
// values one list may expand to.
inline constexpr std::size_t kMaxSweepPoints = 10000;

// "512,1024,...,16384": values in order; "..." continues the two values before it (doubling
// here; an arithmetic step when they differ by a constant that is not a ratio) up to the value
// after it. Throws UsageError naming `parameter` for anything else, non-positive, not increasing, a
// continuation that passes INT64_MAX, or more than kMaxSweepPoints values (refused while expanding).
std::vector<std::int64_t> parse_int_list(std::string_view text, std::string_view parameter);

// nullopt when it fits; otherwise "needs 12.3 GiB (inputs + workspace), 7.1 GiB free".
std::optional<std::string> memory_skip_reason(std::int64_t needed, std::optional<std::int64_t> available);

struct SweepPoint {
  AttentionSpec spec;
  std::string variant;
  Pass pass = Pass::forward;  // what each point measures (--pass): its FLOPs and the rows' "pass"
};
// Variants vary fastest, then head dims, then key lengths, then sequence lengths: seq_q = S, and
// seq_k = S when `seq_ks` is empty, else each of them (a decode sweep: --seq 1 --seq-k 4096,...).
std::vector<SweepPoint> sweep_grid(const AttentionSpec& base, const std::vector<std::int64_t>& seqs,
                                   const std::vector<std::int64_t>& head_dims, const std::vector<std::string>& variants,
                                   const std::vector<std::int64_t>& seq_ks = {});

struct SweepRecord {
  SweepPoint point;
  std::string status = "ok";  // ok | skipped | refused | failed
  std::string reason;
  double device_ms = 0, cpu_ms = 0, setup_ms = 0, tflops = 0, pct_of_peak = 0, rel_err = 0;
  TimeStats time;  // the samples behind device_ms, in ms
  double kernels_per_forward = 0, memcpy_per_forward = 0, memset_per_forward = 0;
  std::int64_t peak_extra_bytes = 0;
  bool nan_output = false;
  double flops = 0, min_bytes = 0, intensity = 0;
  std::string trace_path;
};

SweepRecord record_from_result(const SweepPoint& point, const RunResult& result, const Ceilings& ceilings);
SweepRecord record_not_run(const SweepPoint& point, std::string status, std::string reason);

std::string sweep_csv(const std::vector<SweepRecord>& records);
nlohmann::json sweep_json(const std::vector<SweepRecord>& records, const Ceilings& ceilings);
std::vector<SweepRecord> sweep_records_from_json(const nlohmann::json& json);

// Writes DIR/STEM.csv and DIR/STEM.json atomically, as a pair: both or neither (sweep names
// them by sweep_stem).
void write_sweep_files(const std::string& dir, const std::vector<SweepRecord>& records, const Ceilings& ceilings,
                       const std::string& stem = "sweep");

// "[#######.............]  7/20  flash S=4096 D=128  0.560 ms" for a terminal, or one plain line.
std::string progress_line(std::size_t done, std::size_t total, const SweepRecord& record, bool terminal, int width = 80);

}  // namespace attnprof::report
