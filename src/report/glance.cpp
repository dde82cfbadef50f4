#include "report/glance.h"

#include <attnprof/error.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "report/backward_insights.h"
#include "report/ceilings.h"
#include "report/result_keys.h"
#include "report/time_stats_text.h"

namespace attnprof::report {

std::size_t display_width(const std::string& text) {
  std::size_t n = 0;
  for (unsigned char c : text) {
    if ((c & 0xC0) != 0x80) ++n;  // count the first byte of each code point
  }
  return n;
}

std::vector<std::string> wrap_text(const std::string& text, std::size_t width) {
  std::vector<std::string> lines;
  std::string line;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t space = text.find(' ', start);
    std::string word = text.substr(start, space == std::string::npos ? std::string::npos : space - start);
    start = space == std::string::npos ? text.size() : space + 1;
    if (word.empty()) continue;
    // A word longer than the column (a kernel name) is cut into pieces.
    while (display_width(word) > width) {
      if (!line.empty()) {
        lines.push_back(line);
        line.clear();
      }
      std::size_t bytes = 0, points = 0;
      while (bytes < word.size() && points < width) {
        ++bytes;
        while (bytes < word.size() && (static_cast<unsigned char>(word[bytes]) & 0xC0) == 0x80) ++bytes;
        ++points;
      }
      lines.push_back(word.substr(0, bytes));
      word = word.substr(bytes);
    }
    if (line.empty()) {
      line = word;
    } else if (display_width(line) + 1 + display_width(word) <= width) {
      line += " " + word;
    } else {
      lines.push_back(line);
      line = word;
    }
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

RunFacts run_facts(const RunResult& result) {
  RunFacts facts;
  facts.spec = result.spec;
  facts.peak_extra_bytes = result.peak_extra_bytes;
  if (result.cpu_ns > 0) facts.cpu_ns_per_forward = result.cpu_ns;
  if (result.median_ns > 0) facts.device_ns_per_forward = result.median_ns;
  facts.nan_output = result.nan_output;
  facts.masked_rows = result.masked_rows;
  facts.masked_rows_nan = result.masked_rows_nan;
  facts.nan_only_in_masked_rows = result.nan_only_in_masked_rows;
  return facts;
}

std::string differed_text(const RunResult& result) {
  if (result.determinism_differed.empty()) return {};
  std::string names;
  for (const std::string& n : result.determinism_differed) names += (names.empty() ? "" : ", ") + n;
  return " (" + names + ")";
}

std::vector<Insight> pass_insights(const RunResult& result, const RunFacts& facts) {
  std::vector<Insight> insights;
  // The forward's rules read attn_fwd ranges and speak of forwards: a backward or train run gets
  // the backward's rules (attn_bwd) and its own facts, never a claim about a forward's numbers.
  if (result.trace && result.pass == Pass::forward) return derive_insights(*result.trace, facts);
  if (result.trace) insights = derive_backward_insights(*result.trace, facts);
  if (auto nan = rules::nan_output(facts)) insights.push_back(*nan);
  return insights;
}

GlanceRow glance_row(const RunResult& result, double peak_tflops) {
  GlanceRow row;
  row.variant = result.variant;
  row.summary = result.summary;
  row.kernels_per_forward = result.kernels_per_forward;
  row.memcpy_per_forward = result.memcpy_per_forward;
  row.memset_per_forward = result.memset_per_forward;
  row.device_ms = result.median_ns / 1e6;
  row.cpu_ms = result.cpu_ns / 1e6;
  row.time = result.time.scaled(1e-6);
  row.cpu_time = result.cpu_time.scaled(1e-6);
  row.setup_ms = result.setup_ns / 1e6;
  row.peak_extra_bytes = result.peak_extra_bytes;
  row.tflops = result.tflops;
  row.pct_of_peak = pct_of_peak(result.tflops, peak_tflops);
  row.rel_err = result.rel_err;
  row.nan_output = result.nan_output;
  row.masked_rows = result.masked_rows;
  row.masked_rows_nan = result.masked_rows_nan;
  row.nan_only_in_masked_rows = result.nan_only_in_masked_rows;
  if (result.pass != Pass::forward) row.grad_rel_err = result.grad_rel_err;
  row.trace_path = result.trace_path;
  RunFacts facts = run_facts(result);
  row.insights = pass_insights(result, facts);
  if (auto setup = rules::one_time_setup(result.setup_ns, result.median_ns)) row.insights.push_back(*setup);
  if (result.determinism_runs > 0) {
    row.insights.push_back(result.determinism_mismatches == 0
                               ? Insight{"deterministic", fmt::format("{} runs on the same inputs were bit-identical",
                                                                      result.determinism_runs),
                                         {}}
                               : Insight{"nondeterministic",
                                         fmt::format("{} of {} runs on the same inputs differed from the first{}",
                                                     result.determinism_mismatches, result.determinism_runs,
                                                     differed_text(result)),
                                         {}});
  }
  return row;
}

GlanceRow refused_row(std::string variant, std::string summary, std::string reason) {
  GlanceRow row;
  row.variant = std::move(variant);
  row.summary = std::move(summary);
  row.refusal = std::move(reason);
  return row;
}

nlohmann::json glance_row_json(const GlanceRow& row) {
  const nlohmann::json insights = insights_json(row.insights);
  nlohmann::json j;
  j["variant"] = row.variant;
  j["summary"] = row.summary;
  if (row.refusal) {
    j["refused"] = *row.refusal;
    for (const char* key : {"kernels_per_forward", "memcpy_per_forward", "memset_per_forward", "device_ms", "cpu_ms",
                            "time_stats", "cpu_time_stats", "setup_ms", "peak_extra_bytes", "tflops", "pct_of_peak", "rel_err"}) {
      j[key] = nullptr;
    }
  } else {
    j["kernels_per_forward"] = count_json(row.kernels_per_forward);
    j["memcpy_per_forward"] = count_json(row.memcpy_per_forward);
    j["memset_per_forward"] = count_json(row.memset_per_forward);
    j["device_ms"] = row.device_ms;
    j["cpu_ms"] = row.cpu_ms;
    j["time_stats"] = time_stats_json(row.time);
    j["cpu_time_stats"] = time_stats_json(row.cpu_time);
    j["setup_ms"] = row.setup_ms;
    j["peak_extra_bytes"] = row.peak_extra_bytes;
    j["tflops"] = row.tflops;
    j["pct_of_peak"] = row.pct_of_peak;
    // JSON has no NaN: an undefined error is null, with nan_output true. NaN confined to fully
    // masked rows (PyTorch's naive behaviour) keeps the error over the defined rows.
    const bool undefined = (row.nan_output && !row.nan_only_in_masked_rows) || !std::isfinite(row.rel_err);
    j["rel_err"] = undefined ? nlohmann::json(nullptr) : nlohmann::json(row.rel_err);
    if (row.grad_rel_err) {
      j["grad_rel_err"] = std::isfinite(*row.grad_rel_err) ? nlohmann::json(*row.grad_rel_err) : nlohmann::json(nullptr);
    }
  }
  j["nan_output"] = row.nan_output;
  j["fully_masked_rows"] = row.masked_rows;
  j["fully_masked_rows_nan"] = row.masked_rows_nan;
  j["nan_only_in_masked_rows"] = row.nan_only_in_masked_rows;
  j["insights"] = insights;
  j["trace_path"] = row.trace_path;
  return j;
}

nlohmann::json glance_json(const std::vector<GlanceRow>& rows) {
  nlohmann::json list = nlohmann::json::array();
  for (const GlanceRow& row : rows) list.push_back(glance_row_json(row));
  return {{"rows", list}};
}

namespace {
double number_or_zero(const nlohmann::json& row, const char* key) {
  auto it = row.find(key);
  return it == row.end() || !it->is_number() ? 0.0 : it->get<double>();
}
}  // namespace

GlanceRow glance_row_from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("variant") || !j["variant"].is_string()) {
    throw Error("results JSON: a row has no \"variant\" string");
  }
  GlanceRow row;
  row.variant = j["variant"].get<std::string>();
  row.summary = j.value("summary", std::string());
  if (j.contains("refused") && j["refused"].is_string()) row.refusal = j["refused"].get<std::string>();
  row.kernels_per_forward = number_or_zero(j, "kernels_per_forward");
  row.memcpy_per_forward = number_or_zero(j, "memcpy_per_forward");
  row.memset_per_forward = number_or_zero(j, "memset_per_forward");
  row.device_ms = number_or_zero(j, "device_ms");
  row.cpu_ms = number_or_zero(j, "cpu_ms");
  if (j.contains("time_stats")) row.time = time_stats_from_json(j["time_stats"]);
  if (j.contains("cpu_time_stats")) row.cpu_time = time_stats_from_json(j["cpu_time_stats"]);
  row.setup_ms = number_or_zero(j, "setup_ms");
  row.peak_extra_bytes = static_cast<std::int64_t>(number_or_zero(j, "peak_extra_bytes"));
  row.tflops = number_or_zero(j, "tflops");
  row.pct_of_peak = number_or_zero(j, "pct_of_peak");
  row.rel_err = number_or_zero(j, "rel_err");
  row.nan_output = j.value("nan_output", false);
  row.masked_rows = static_cast<std::int64_t>(number_or_zero(j, "fully_masked_rows"));
  row.masked_rows_nan = static_cast<std::int64_t>(number_or_zero(j, "fully_masked_rows_nan"));
  row.nan_only_in_masked_rows = j.value("nan_only_in_masked_rows", false);
  if (j.contains("grad_rel_err")) {
    const nlohmann::json& g = j["grad_rel_err"];
    row.grad_rel_err = g.is_number() ? g.get<double>() : std::numeric_limits<double>::quiet_NaN();
  }
  row.trace_path = j.value("trace_path", std::string());
  if (j.contains("insights") && j["insights"].is_array()) {
    for (const auto& i : j["insights"]) {
      Insight insight{i.value("code", ""), i.value("text", ""), {}};
      if (i.contains("about") && i["about"].is_array())
        for (const auto& about : i["about"])
          if (about.is_string()) insight.about.push_back(about.get<std::string>());
      row.insights.push_back(std::move(insight));
    }
  }
  return row;
}

}  // namespace attnprof::report
