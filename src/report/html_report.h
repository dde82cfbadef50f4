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

// Reads DIR/compare.json and DIR/sweep.json; throws UsageError naming DIR when it has neither,
// Error naming the file when one does not parse.
ReportInputs read_report_inputs(const std::string& dir);

// ReportInputs::measured of DIR: the later modification time of DIR/compare.json and
// DIR/sweep.json, "YYYY-MM-DD HH:MM UTC"; empty when neither is there.
std::string results_written(const std::string& dir);

// A trace loader for compare rows that carry a trace path but no timeline (the trace reader).
using TraceLoader = std::function<std::optional<trace::Trace>(const std::string& path)>;

std::string render_html_report(const ReportInputs& inputs, const TraceLoader& load_trace = {});

}  // namespace attnprof::report
