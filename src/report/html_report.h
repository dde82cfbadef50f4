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
  std::optional<nlohmann::json> compare;  // DIR/compare.json
  std::optional<nlohmann::json> sweep;    // DIR/sweep.json
  std::string title = "attnprof report";
  std::string measured;  // when the results were written: results_written(DIR); empty: not known
};

// Reads DIR/compare.json and DIR/sweep.json (report_inputs.cpp); throws UsageError naming DIR
// when it has neither, and naming the file and the field when one is not a regular file, too
// large, not JSON, or holds a value the report cannot draw (a row's dtype, a trace_path that
// names a FIFO...).
ReportInputs read_report_inputs(const std::string& dir);
// A JSON library exception's text without its "[json.exception.type_error.302] " prefix.
std::string json_error_text(const std::string& what);

// ReportInputs::measured of DIR: the later modification time of DIR/compare.json and
// DIR/sweep.json, "YYYY-MM-DD HH:MM UTC"; empty when neither is there.
std::string results_written(const std::string& dir);

// A trace loader for compare rows that carry a trace path but no timeline (the trace reader).
using TraceLoader = std::function<std::optional<trace::Trace>(const std::string& path)>;

std::string render_html_report(const ReportInputs& inputs, const TraceLoader& load_trace = {});

}  // namespace attnprof::report
