#include "report/html_report.h"

#include <attnprof/dtype.h>
#include <attnprof/error.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "report/ceilings.h"
#include "report/glance.h"
#include "report/html_escape.h"
#include "report/insights.h"
#include "report/results.h"
#include "report/svg_plot.h"
#include "report/sweep.h"
#include "report/time_stats_text.h"
#include "report/step_timeline.h"
#include "report/variant_color.h"

namespace attnprof::report {
namespace {

namespace fs = std::filesystem;

constexpr const char* kStyle = R"(
body { font-family: sans-serif; margin: 24px; color: #1b1b1b; max-width: 1200px; }
h1 { font-size: 22px; margin-bottom: 4px; }
h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #ccc; padding-bottom: 4px; }
h3 { font-size: 14px; margin: 14px 0 4px 0; }
.meta { color: #555; font-size: 13px; margin: 2px 0; }
table.glance { border-collapse: collapse; font-size: 12px; width: 100%; }
table.glance th, table.glance td { border: 1px solid #d5d5d5; padding: 4px 6px; vertical-align: top; }
table.glance th { background: #f1f3f6; text-align: left; }
table.glance td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
table.glance td.variant { font-weight: bold; white-space: nowrap; }
table.glance tr.refused td { color: #777; }
ul.insights { margin: 0; padding-left: 16px; }
ul.insights li { margin-bottom: 3px; }
code { background: #f4f4f4; padding: 0 3px; font-size: 11px; }
.plots { display: flex; flex-wrap: wrap; gap: 16px; }
.legend span { display: inline-block; margin-right: 12px; font-size: 12px; }
.legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; vertical-align: middle; }
.none { color: #777; font-style: italic; font-size: 13px; }
table.header { border-collapse: collapse; font-size: 13px; margin: 6px 0 10px 0; }
table.header th { text-align: left; color: #555; font-weight: normal; padding: 1px 14px 1px 0; }
table.header td { padding: 1px 0; }
i.swatch { display: inline-block; width: 11px; height: 11px; margin-right: 5px; vertical-align: baseline; border-radius: 2px; }
)";

// A square of the variant's colour before its name, the key from the table to the plots.
std::string swatch(const std::string& variant) {
  return fmt::format("<i class=\"swatch\" data-variant=\"{}\" style=\"background:{}\"></i>", html_escape(variant),
                     variant_color(variant));
}

std::string utc_minute(std::filesystem::file_time_type when) {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::file_clock::to_sys(when));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", &tm);
  return text;
}

// What the results are of, one row each: shape, dtype, mask, layout, device, when they were
// measured and the attnprof that writes the report.
std::string header_table(const ReportInputs& in) {
  std::vector<std::pair<std::string, std::string>> rows;
  std::optional<AttentionSpec> spec;
  std::string device;
  if (in.compare) {
    for (const auto& row : in.compare->value("rows", nlohmann::json::array())) {
      if (row.contains("spec") && row["spec"].is_object()) {
        spec = spec_from_json(row["spec"]);
        break;
      }
    }
    // shape_text is "B=.. H=.. S=.. D=..[ Hkv=..][ Sk=..], dtype, mask": its first part.
    if (spec) rows.emplace_back("shape", shape_text(*spec).substr(0, shape_text(*spec).find(", ")));
    if (in.compare->contains("ceilings")) device = (*in.compare)["ceilings"].value("device_name", std::string());
  }
  if (in.sweep) {
    std::set<std::int64_t> seqs, head_dims;
    std::optional<AttentionSpec> first;
    for (const auto& r : sweep_records_from_json(*in.sweep)) {
      if (!first) first = r.point.spec;
      seqs.insert(r.point.spec.seq_q);
      head_dims.insert(r.point.spec.head_dim);
    }
    if (first) {
      rows.emplace_back(in.compare ? "sweep" : "shape",
                        fmt::format("B={} H={} S={}\u2026{} D={}", first->batch, first->heads, *seqs.begin(),
                                    *seqs.rbegin(), fmt::join(head_dims, ",")));
      if (!spec) spec = first;
    }
    if (device.empty() && in.sweep->contains("ceilings")) device = (*in.sweep)["ceilings"].value("device_name", std::string());
  }
  if (spec) {
    rows.emplace_back("dtype", std::string(dtype_name(spec->dtype)));
    rows.emplace_back("mask", !spec->causal ? std::string("not causal")
                                            : fmt::format("causal, {}", causal_align_name(spec->causal_align)));
    rows.emplace_back("layout", std::string(layout_name(spec->layout)));
    if (device.empty()) device = device_name(spec->device);
  }
  rows.emplace_back("device", device.empty() ? std::string("not recorded") : device);
  rows.emplace_back("measured", in.measured.empty() ? std::string("not recorded") : in.measured);
  rows.emplace_back("report by", "attnprof " ATTNPROF_VERSION);
  std::string html = "<table class=\"header\">";
  for (const auto& [key, value] : rows) html += fmt::format("<tr><th>{}</th><td>{}</td></tr>", key, html_escape(value));
  return html + "</table>\n";
}

std::string number_cell(const std::string& text) { return "<td class=\"num\">" + html_escape(text) + "</td>"; }

// A backward or train compare (rows with "pass") counts per backward or per step and adds the
// gradients' error column.
std::string glance_table(const nlohmann::json& compare) {
  const nlohmann::json rows = compare.value("rows", nlohmann::json::array());
  const bool grads = std::any_of(rows.begin(), rows.end(), [](const nlohmann::json& j) { return j.contains("grad_rel_err"); });
  std::string pass = "forward";
  for (const auto& j : rows) {
    if (j.contains("pass") && j["pass"].is_string()) pass = j["pass"].get<std::string>();
  }
  const std::string per = pass == "backward" ? "bwd" : pass == "train" ? "step" : "fwd";
  std::string html = fmt::format(
      "<table class=\"glance\"><thead><tr><th>variant</th><th>what it does</th><th>kernels / {0}</th><th>memcpy / "
      "{0}</th><th>memset / {0}</th><th>device ms (min–max)</th><th>CPU ms</th><th>peak extra</th><th>TFLOP/s</th><th>% of "
      "peak</th><th>error vs fp64</th>{1}<th>what the trace revealed</th></tr></thead>\n<tbody>\n",
      per, grads ? "<th>gradient error vs fp64</th>" : "");
  for (const auto& j : rows) {
    GlanceRow row = glance_row_from_json(j);
    if (row.refusal) {
      html += fmt::format("<tr class=\"refused\"><td class=\"variant\">{}</td><td>{}</td><td colspan=\"{}\">refused: "
                          "{}</td></tr>\n",
                          html_escape(row.variant), html_escape(row.summary), grads ? 11 : 10, html_escape(*row.refusal));
      continue;
    }
    html += fmt::format("<tr><td class=\"variant\">{}{}</td><td>{}</td>", swatch(row.variant), html_escape(row.variant),
                        html_escape(row.summary));
    html += number_cell(fmt::format("{:.1f}", row.kernels_per_forward));
    html += number_cell(fmt::format("{:.1f}", row.memcpy_per_forward));
    html += number_cell(fmt::format("{:.1f}", row.memset_per_forward));
    const std::string spread =
        row.time.count > 0 ? fmt::format(" ({}, {} {})", spread_text(row.time), row.time.count,
                                         pass == "backward" ? "backwards" : pass == "train" ? "steps" : "forwards")
                           : "";
    html += number_cell(fmt::format("{:.4g}", row.device_ms) + spread);
    html += number_cell(fmt::format("{:.4g}", row.cpu_ms));
    html += number_cell(format_bytes(static_cast<double>(row.peak_extra_bytes)));
    html += number_cell(fmt::format("{:.4g}", row.tflops));
    html += number_cell(row.pct_of_peak > 0 ? fmt::format("{:.1f}%", row.pct_of_peak) : "-");
    html += number_cell(row.nan_output && !row.nan_only_in_masked_rows ? "NaN" : fmt::format("{:.1e}", row.rel_err));
    if (grads) {
      html += number_cell(!row.grad_rel_err                    ? std::string("-")
                          : std::isfinite(*row.grad_rel_err) ? fmt::format("{:.1e}", *row.grad_rel_err)
                                                             : std::string("NaN"));
    }
    html += "<td><ul class=\"insights\">";
    for (const Insight& i : row.insights) {
      html += fmt::format("<li><code>{}</code> {}</li>", html_escape(i.code), html_escape(i.text));
    }
    html += "</ul></td></tr>\n";
  }
  return html + "</tbody></table>\n";
}

std::string timeline_legend() {
  std::string html = "<p class=\"legend\">";
  for (const char* kind : {"user_annotation", "cpu_op", "cuda_runtime", "gemm", "elementwise", "mask", "copy", "softmax",
                           "attention", "memset"}) {
    const std::string color = timeline_color(kind);
    html += fmt::format("<span><i style=\"background:{}\"></i>{}</span>", color, kind);
  }
  return html + "</p>\n";
}

std::string timelines(const nlohmann::json& compare, const TraceLoader& load_trace) {
  std::vector<std::pair<std::string, std::optional<StepTimeline>>> steps;
  std::int64_t longest = 1;
  for (const auto& row : compare.value("rows", nlohmann::json::array())) {
    if (row.contains("refused")) continue;
    std::optional<StepTimeline> timeline;
    if (row.contains("timeline") && row["timeline"].is_object()) {
      timeline = step_timeline_from_json(row["timeline"]);
    } else if (load_trace && !row.value("trace_path", std::string()).empty()) {
      if (auto trace = load_trace(row["trace_path"].get<std::string>())) timeline = extract_step_timeline(*trace);
    }
    if (timeline) longest = std::max(longest, timeline->span_ns);
    steps.emplace_back(row.value("variant", std::string()), std::move(timeline));
  }
  // One scale for all: a step twice as long is drawn twice as wide.
  const TimeScale scale = common_time_scale(longest);
  std::string html = fmt::format(
      "<p class=\"meta\" id=\"time-scale\" data-ns-per-px=\"{:.6g}\">All timelines share one time scale: 1 px = {}, "
      "grid lines every {}; the longest step ({}) fills the width.</p>\n",
      scale.ns_per_px, html_escape(format_duration_ns(scale.ns_per_px)),
      html_escape(format_duration_ns(static_cast<double>(scale.tick_ns))),
      html_escape(format_duration_ns(static_cast<double>(longest))));
  html += timeline_legend();
  for (const auto& [variant, timeline] : steps) {
    if (!timeline) {
      html += fmt::format("<h3>{}{}</h3><p class=\"none\">no timeline: the run kept no trace</p>\n", swatch(variant),
                          html_escape(variant));
      continue;
    }
    html += fmt::format("<div class=\"step\" data-timeline=\"{}\"><h3>{}{} \u2014 {} ({})</h3>\n", html_escape(variant),
                        swatch(variant), html_escape(variant), html_escape(timeline->step),
                        html_escape(format_duration_ns(static_cast<double>(timeline->span_ns))));
    html += timeline_svg(*timeline, scale) + "</div>\n";
  }
  return html;
}

std::string sweep_plots(const nlohmann::json& sweep) {
  std::vector<SweepRecord> records = sweep_records_from_json(sweep);
  std::map<std::int64_t, int> head_dims;
  for (const auto& r : records) head_dims[r.point.spec.head_dim] = 1;
  // A variant's colour on every line; with several head dims, one dash pattern per head dim.
  int dash_index = 0;
  for (auto& [head_dim, dash] : head_dims) dash = dash_index++;
  constexpr const char* kDashes[] = {"", "6 3", "2 2", "8 3 2 3"};
  std::vector<PlotSeries> time, memory;
  std::map<std::string, std::size_t> index;
  for (const auto& r : records) {
    if (r.status != "ok") continue;
    std::string name = r.point.variant;
    if (head_dims.size() > 1) name += fmt::format(" D={}", r.point.spec.head_dim);
    auto [it, fresh] = index.try_emplace(name, time.size());
    if (fresh) {
      const PlotSeries series{name, {}, r.point.variant, variant_color(r.point.variant),
                              kDashes[head_dims[r.point.spec.head_dim] % 4]};
      time.push_back(series);
      memory.push_back(series);
    }
    const double s = static_cast<double>(r.point.spec.seq_q);
    time[it->second].points.emplace_back(s, r.device_ms);
    memory[it->second].points.emplace_back(s, static_cast<double>(r.peak_extra_bytes) / (1024.0 * 1024.0));
  }
  std::string t = log_log_plot_svg({"Time per forward", "sequence length S", "ms", 430, 380}, time);
  std::string m = log_log_plot_svg({"Peak extra memory", "sequence length S", "MiB", 430, 380}, memory);
  if (t.empty() && m.empty()) return "<p class=\"none\">the sweep has no completed points</p>\n";
  std::string skipped;
  for (const auto& r : records) {
    if (r.status == "ok") continue;
    skipped += fmt::format("<li>{} S={} D={}: {} \u2014 {}</li>", html_escape(r.point.variant), r.point.spec.seq_q,
                           r.point.spec.head_dim, html_escape(r.status), html_escape(r.reason));
  }
  std::string html = "<div class=\"plots\"><div id=\"plot-time\">" + t + "</div><div id=\"plot-memory\">" + m +
                     "</div></div>\n";
  if (!skipped.empty()) html += "<p class=\"meta\">Not run:</p><ul class=\"meta\">" + skipped + "</ul>\n";
  return html;
}

std::string roofline_section(const ReportInputs& in) {
  Ceilings ceilings;
  if (in.compare && in.compare->contains("ceilings")) ceilings = ceilings_from_json((*in.compare)["ceilings"]);
  if (!ceilings.measured() && in.sweep && in.sweep->contains("ceilings")) ceilings = ceilings_from_json((*in.sweep)["ceilings"]);
  std::vector<RooflineMark> marks;
  if (in.compare) {
    for (const auto& row : in.compare->value("rows", nlohmann::json::array())) {
      if (!row.contains("roofline") || !row["roofline"].is_object()) continue;
      const auto& p = row["roofline"];
      const std::string variant = row.value("variant", std::string());
      marks.push_back({variant, p.value("intensity", 0.0), p.value("tflops", 0.0), variant, variant_color(variant)});
    }
  }
  if (marks.empty() && in.sweep) {
    // One mark per variant and head dim: its largest completed S.
    std::map<std::string, SweepRecord> largest;
    for (const auto& r : sweep_records_from_json(*in.sweep)) {
      if (r.status != "ok") continue;
      std::string name = fmt::format("{} S={} D={}", r.point.variant, r.point.spec.seq_q, r.point.spec.head_dim);
      std::string key = fmt::format("{} D={}", r.point.variant, r.point.spec.head_dim);
      auto it = largest.find(key);
      if (it == largest.end() || r.point.spec.seq_q > it->second.point.spec.seq_q) largest[key] = r;
    }
    // The variant's colour; the head dim's shape when there are several.
    std::map<std::int64_t, int> shapes;
    for (const auto& [key, r] : largest) shapes[r.point.spec.head_dim] = 0;
    int shape = 0;
    for (auto& [head_dim, s] : shapes) s = shape++;
    for (const auto& [key, r] : largest) {
      marks.push_back({fmt::format("{} S={}", key, r.point.spec.seq_q), r.intensity, r.tflops, r.point.variant,
                       variant_color(r.point.variant), shapes[r.point.spec.head_dim]});
    }
  }
  // The roof of the runs' dtype: the bf16 matmul ceiling for bf16/fp16 runs when it was measured.
  DType dtype = DType::bf16;
  if (in.compare) {
    for (const auto& row : in.compare->value("rows", nlohmann::json::array())) {
      if (row.contains("spec") && row["spec"].is_object()) dtype = spec_from_json(row["spec"]).dtype;
    }
  } else if (in.sweep) {
    for (const auto& r : sweep_records_from_json(*in.sweep)) dtype = r.point.spec.dtype;
  }
  const double peak = ceilings.peak_tflops(dtype);
  std::string svg = roofline_svg({fmt::format("Roofline (measured ceilings, {})", dtype_name(dtype)),
                                  "FLOP per byte (minimal bytes)", "TFLOP/s", 640, 420},
                                 peak, ceilings.copy_gbps, marks);
  if (svg.empty()) return "<p class=\"none\">no roofline: no measured points</p>\n";
  std::string note = ceilings.measured() ? "<p class=\"meta\">" + html_escape(ceilings_text(ceilings)) + "</p>\n"
                                         : "<p class=\"meta\">ceilings not measured</p>\n";
  return note + "<div id=\"roofline\">" + svg + "</div>\n";
}

}  // namespace

std::string results_written(const std::string& compare_path, const std::string& sweep_path) {
  std::optional<fs::file_time_type> latest;
  for (const std::string& path : {compare_path, sweep_path}) {
    if (path.empty()) continue;
    std::error_code error;
    const auto when = fs::last_write_time(path, error);
    if (!error && (!latest || when > *latest)) latest = when;
  }
  return latest ? utc_minute(*latest) : std::string();
}

std::string render_html_report(const ReportInputs& in, const TraceLoader& load_trace) {
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
                     html_escape(in.title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n";
  html += "<h1>" + html_escape(in.title) + "</h1>\n" + header_table(in);
  if (in.compare) {
    const auto& c = *in.compare;
    html += "<h2>At a glance</h2>\n<div id=\"glance\">" + glance_table(c) + "</div>\n";
    html += "<h2>One step per variant</h2>\n<p class=\"meta\">CPU ranges above, device work below; hover for names "
            "and durations.</p>\n<div id=\"timelines\">" +
            timelines(c, load_trace) + "</div>\n";
  }
  if (in.sweep) html += "<h2>Time and memory against S</h2>\n" + sweep_plots(*in.sweep);
  html += "<h2>Roofline</h2>\n" + roofline_section(in);
  html += "<p class=\"meta\">Written by attnprof. Self-contained: no scripts, fonts or links.</p>\n</body>\n</html>\n";
  return html;
}

}  // namespace attnprof::report
