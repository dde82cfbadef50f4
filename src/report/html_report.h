#pragma once
// `attnprof report DIR`: one self-contained HTML file (inline CSS and SVG; no scripts, fonts or
// URLs) from what compare and sweep left in DIR: a header (shape, dtype, device, date, version),
// the glance table, one step's timeline per variant on one time scale, time and memory against S
// (log-log) and the roofline; each variant in its one colour (variant_color) throughout.
#include <attnprof/trace.h>

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>

namespace attnprof::report {

struct ReportInputs {
  std::optional<nlohmann::json> compare;  // the newest compare results in DIR (results_file)
  std::optional<nlohmann::json> sweep;    // the newest sweep results in DIR
  std::string compare_path, sweep_path;   // the files read; empty when none
  std::string title = "attnprof report";
  std::string measured;  // when the results were written: results_written(DIR); empty: not known
};

// compare and sweep name their results by configuration (compare_<...>.json, sweep_<...>.json,
// run/trace_stem.h), so one DIR may hold several: DIR/KIND.json or DIR/KIND_*.json, the newest
// (then the last by name); "" when DIR holds none. `count` is how many there are.
std::string results_file(const std::string& dir, const std::string& kind, int& count);

// Reads DIR's newest compare and sweep results (report_inputs.cpp); throws UsageError naming DIR
// when it has neither, and naming the file and the field when one is not a regular file, too
// large, not JSON, or holds a value the report cannot draw (a row's dtype, a trace_path that
// names a FIFO...).
ReportInputs read_report_inputs(const std::string& dir);
// A JSON library exception's text without its "[json.exception.type_error.302] " prefix.
std::string json_error_text(const std::string& what);

// ReportInputs::measured: the later modification time of the files (empty paths skipped),
// "YYYY-MM-DD HH:MM UTC"; empty when neither is there.
std::string results_written(const std::string& compare_path, const std::string& sweep_path);

// A trace loader for compare rows that carry a trace path but no timeline (the trace reader).
using TraceLoader = std::function<std::optional<trace::Trace>(const std::string& path)>;

std::string render_html_report(const ReportInputs& inputs, const TraceLoader& load_trace = {});

}  // namespace attnprof::report
