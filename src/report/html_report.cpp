#include "report/html_report.h"

#include <attnprof/dtype.h>
#include <attnprof/error.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <map>
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
)";

std::string number_cell(const std::string& text) { return "<td class=\"num\">" + html_escape(text) + "</td>"; }

std::string glance_table(const nlohmann::json& compare) {
  std::string html =
      "<table class=\"glance\"><thead><tr><th>variant</th><th>what it does</th><th>kernels / fwd</th><th>memcpy / "
      "fwd</th><th>memset / fwd</th><th>device ms (min–max)</th><th>CPU ms</th><th>peak extra</th><th>TFLOP/s</th><th>% of "
      "peak</th><th>error vs fp64</th><th>what the trace revealed</th></tr></thead>\n<tbody>\n";
  for (const auto& j : compare.value("rows", nlohmann::json::array())) {
    GlanceRow row = glance_row_from_json(j);
    if (row.refusal) {
      html += fmt::format("<tr class=\"refused\"><td class=\"variant\">{}</td><td>{}</td><td colspan=\"10\">refused: "
                          "{}</td></tr>\n",
                          html_escape(row.variant), html_escape(row.summary), html_escape(*row.refusal));
      continue;
    }
    html += fmt::format("<tr><td class=\"variant\">{}</td><td>{}</td>", html_escape(row.variant), html_escape(row.summary));
    html += number_cell(fmt::format("{:.1f}", row.kernels_per_forward));
    html += number_cell(fmt::format("{:.1f}", row.memcpy_per_forward));
    html += number_cell(fmt::format("{:.1f}", row.memset_per_forward));
    const std::string spread =
        row.time.count > 0 ? fmt::format(" ({}, {} forwards)", spread_text(row.time), row.time.count) : "";
    html += number_cell(fmt::format("{:.4g}", row.device_ms) + spread);
    html += number_cell(fmt::format("{:.4g}", row.cpu_ms));
    html += number_cell(format_bytes(static_cast<double>(row.peak_extra_bytes)));
    html += number_cell(fmt::format("{:.4g}", row.tflops));
    html += number_cell(row.pct_of_peak > 0 ? fmt::format("{:.1f}%", row.pct_of_peak) : "-");
    html += number_cell(row.nan_output && !row.nan_only_in_masked_rows ? "NaN" : fmt::format("{:.1e}", row.rel_err));
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
  std::string html = timeline_legend();
  for (const auto& row : compare.value("rows", nlohmann::json::array())) {
    if (row.contains("refused")) continue;
    const std::string variant = row.value("variant", std::string());
    std::optional<StepTimeline> timeline;
    if (row.contains("timeline") && row["timeline"].is_object()) {
      timeline = step_timeline_from_json(row["timeline"]);
    } else if (load_trace && !row.value("trace_path", std::string()).empty()) {
      if (auto trace = load_trace(row["trace_path"].get<std::string>())) timeline = extract_step_timeline(*trace);
    }
    if (!timeline) {
      html += fmt::format("<h3>{}</h3><p class=\"none\">no timeline: the run kept no trace</p>\n", html_escape(variant));
      continue;
    }
    html += fmt::format("<h3>{} \u2014 {} ({})</h3>\n", html_escape(variant), html_escape(timeline->step),
                        html_escape(format_duration_ns(static_cast<double>(timeline->span_ns))));
    html += timeline_svg(*timeline);
  }
  return html;
}

std::string sweep_plots(const nlohmann::json& sweep) {
  std::vector<SweepRecord> records = sweep_records_from_json(sweep);
  std::map<std::int64_t, int> head_dims;
  for (const auto& r : records) head_dims[r.point.spec.head_dim] = 1;
  std::vector<PlotSeries> time, memory;
  std::map<std::string, std::size_t> index;
  for (const auto& r : records) {
    if (r.status != "ok") continue;
    std::string name = r.point.variant;
    if (head_dims.size() > 1) name += fmt::format(" D={}", r.point.spec.head_dim);
    auto [it, fresh] = index.try_emplace(name, time.size());
    if (fresh) {
      time.push_back({name, {}});
      memory.push_back({name, {}});
    }
    const double s = static_cast<double>(r.point.spec.seq_q);
    time[it->second].points.emplace_back(s, r.device_ms);
    memory[it->second].points.emplace_back(s, static_cast<double>(r.peak_extra_bytes) / (1024.0 * 1024.0));
  }
  std::string t = log_log_plot_svg({"Time per forward", "sequence length S", "ms", 560, 380}, time);
  std::string m = log_log_plot_svg({"Peak extra memory", "sequence length S", "MiB", 560, 380}, memory);
  if (t.empty() && m.empty()) return "<p class=\"none\">the sweep has no completed points</p>\n";
  std::string skipped;
  for (const auto& r : records) {
    if (r.status == "ok") continue;
    skipped += fmt::format("<li>{} S={} D={}: {} \u2014 {}</li>", html_escape(r.point.variant), r.point.spec.seq_q,
                           r.point.spec.head_dim, html_escape(r.status), html_escape(r.reason));
  }
  std::string html = "<div class=\"plots\">" + t + m + "</div>\n";
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
      marks.push_back({row.value("variant", std::string()), p.value("intensity", 0.0), p.value("tflops", 0.0)});
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
    for (const auto& [key, r] : largest) {
      marks.push_back({fmt::format("{} S={}", key, r.point.spec.seq_q), r.intensity, r.tflops});
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
                                  "FLOP per byte (minimal bytes)", "TFLOP/s", 760, 420},
                                 peak, ceilings.copy_gbps, marks);
  if (svg.empty()) return "<p class=\"none\">no roofline: no measured points</p>\n";
  std::string note = ceilings.measured() ? "<p class=\"meta\">" + html_escape(ceilings_text(ceilings)) + "</p>\n"
                                         : "<p class=\"meta\">ceilings not measured</p>\n";
  return note + svg;
}

}  // namespace

std::string render_html_report(const ReportInputs& in, const TraceLoader& load_trace) {
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
                     html_escape(in.title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n";
  html += "<h1>" + html_escape(in.title) + "</h1>\n";
  if (in.compare) {
    const auto& c = *in.compare;
    html += fmt::format("<p class=\"meta\">{} on {}</p>\n", html_escape(c.value("shape", std::string())),
                        html_escape(c.contains("ceilings") ? c["ceilings"].value("device_name", std::string())
                                                           : c.value("device", std::string())));
    html += "<h2>At a glance</h2>\n" + glance_table(c);
    html += "<h2>One step per variant</h2>\n<p class=\"meta\">CPU ranges above, device work below; hover for names "
            "and durations.</p>\n" +
            timelines(c, load_trace);
  }
  if (in.sweep) html += "<h2>Time and memory against S</h2>\n" + sweep_plots(*in.sweep);
  html += "<h2>Roofline</h2>\n" + roofline_section(in);
  html += "<p class=\"meta\">Written by attnprof. Self-contained: no scripts, fonts or links.</p>\n</body>\n</html>\n";
  return html;
}

}  // namespace attnprof::report
