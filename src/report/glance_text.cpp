// The glance table for a terminal: a header line, one line per variant with the columns that
// fit, then the ranking and the insights below, each once, naming its rows.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "report/glance.h"
#include "report/ranking.h"
#include "report/time_stats_text.h"

namespace attnprof::report {
namespace {

struct Column {
  std::string title;
  int priority;  // 0: always shown; then the lower the earlier it is kept when space runs out
  std::function<std::string(const GlanceRow&)> cell;
  std::size_t width = 0;
};

std::string pad(const std::string& text, std::size_t width, bool right) {
  std::size_t w = display_width(text);
  if (w >= width) return text;
  return right ? std::string(width - w, ' ') + text : text + std::string(width - w, ' ');
}

std::string count_text(double value) {
  if (std::fabs(value - std::round(value)) < 0.05) return fmt::format("{:.0f}", value);
  return fmt::format("{:.1f}", value);
}

std::string tflops_text(double tflops) {
  if (tflops >= 10) return fmt::format("{:.1f}", tflops);
  if (tflops >= 0.1) return fmt::format("{:.2f}", tflops);
  return fmt::format("{:.4f}", tflops);
}

std::vector<Column> all_columns() {
  return {
      {"median ms", 0, [](const GlanceRow& r) { return ms_text(r.device_ms); }},
      {"min\u2013max ms", 0, [](const GlanceRow& r) { return spread_text(r.time); }},
      {"TFLOP/s", 1, [](const GlanceRow& r) { return tflops_text(r.tflops); }},
      {"%peak", 2, [](const GlanceRow& r) { return r.pct_of_peak > 0 ? fmt::format("{:.1f}%", r.pct_of_peak) : "-"; }},
      // NaN only in fully masked rows (naive, inplace, as PyTorch): the error over the defined
      // rows; the nan_output insight says why the output holds NaN
      {"err", 3,
       [](const GlanceRow& r) {
         return r.nan_output && !r.nan_only_in_masked_rows ? std::string("nan") : fmt::format("{:.1e}", r.rel_err);
       }},
      // backward and train rows: the worst of dQ, dK, dV (the column is left out when no row has one)
      {"grad err", 3,
       [](const GlanceRow& r) {
         if (!r.grad_rel_err) return std::string("-");
         return std::isfinite(*r.grad_rel_err) ? fmt::format("{:.1e}", *r.grad_rel_err) : std::string("nan");
       }},
      {"kern", 4, [](const GlanceRow& r) { return count_text(r.kernels_per_forward); }},
      {"CPU ms", 5, [](const GlanceRow& r) { return ms_text(r.cpu_ms); }},
      {"extra mem", 6, [](const GlanceRow& r) { return format_bytes(static_cast<double>(r.peak_extra_bytes)); }},
      {"cpy", 7, [](const GlanceRow& r) { return count_text(r.memcpy_per_forward); }},
      {"set", 8, [](const GlanceRow& r) { return count_text(r.memset_per_forward); }},
  };
}

void append_wrapped(std::string& out, const std::string& text, std::size_t width, std::size_t indent) {
  const std::size_t room = width > indent + 10 ? width - indent : 10;
  std::vector<std::string> lines = wrap_text(text, room + indent);
  if (lines.empty()) return;
  out += lines[0] + "\n";
  std::string rest;
  for (std::size_t i = 1; i < lines.size(); ++i) rest += (rest.empty() ? "" : " ") + lines[i];
  for (const std::string& line : wrap_text(rest, room)) out += std::string(indent, ' ') + line + "\n";
}

}  // namespace

std::string table_header(const RunResult& r, const std::string& device_name,
                         std::pair<std::int64_t, std::int64_t> counts) {
  const AttentionSpec& s = r.spec;
  std::string shape = fmt::format("{}\u00d7{}\u00d7{}\u00d7{} (B\u00d7H\u00d7S\u00d7D)", s.batch, s.heads, s.seq_q, s.head_dim);
  if (s.seq_k != s.seq_q) shape += fmt::format(" Sk {}", s.seq_k);
  if (s.kv_heads != s.heads) shape += fmt::format(" Hkv {}", s.kv_heads);
  const std::string mask = !s.causal                                 ? "non-causal"
                           : s.causal_align == CausalAlign::top_left ? "causal"
                                                                     : fmt::format("causal {}", causal_align_name(s.causal_align));
  std::string device = std::string(attnprof::device_name(s.device));
  if (!device_name.empty()) device += ", " + device_name;
  // The threads the run used, unless the device's label already states them.
  const std::string threads = r.threads == 1 ? "1 thread" : fmt::format("{} threads", r.threads);
  if (device.find(threads) == std::string::npos) device += " \u00b7 " + threads;
  const std::string pass = r.pass == Pass::forward ? "" : fmt::format(" \u00b7 pass {}", pass_name(r.pass));
  const char* counted = r.pass == Pass::forward ? "forwards" : r.pass == Pass::backward ? "backwards" : "training steps";
  const std::string medians = counts.first == counts.second
                                  ? fmt::format("median of {} {}", counts.first, counted)
                                  : fmt::format("medians of {}\u2013{} {}", counts.first, counts.second, counted);
  // compare's rounds: each later one measured by a fresh process.
  const std::string processes = r.time.processes > 1 ? fmt::format(" in {} processes", r.time.processes) : "";
  return fmt::format("{} {} {} {}{} \u00b7 device: {} \u00b7 {}{}", shape, dtype_name(s.dtype), layout_name(s.layout),
                     mask, pass, device, medians, processes);
}

std::string glance_text(const std::vector<GlanceRow>& rows, int width_in, const std::string& header) {
  const std::size_t width = static_cast<std::size_t>(std::max(width_in, 20));
  std::size_t name_width = 7;
  for (const GlanceRow& row : rows) name_width = std::max(name_width, display_width(row.variant));

  std::vector<Column> columns = all_columns();
  if (std::none_of(rows.begin(), rows.end(), [](const GlanceRow& r) { return r.grad_rel_err.has_value(); })) {
    std::erase_if(columns, [](const Column& c) { return c.title == "grad err"; });
  }
  for (Column& c : columns) {
    c.width = display_width(c.title);
    for (const GlanceRow& row : rows) {
      if (!row.refusal) c.width = std::max(c.width, display_width(c.cell(row)));
    }
  }
  // Keep columns by priority while the line fits (the priority-0 ones always).
  std::vector<int> order(columns.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return columns[a].priority < columns[b].priority; });
  std::vector<bool> kept(columns.size(), false);
  std::size_t used = name_width;
  for (int i : order) {
    if (columns[i].priority == 0 || used + 2 + columns[i].width <= width) {
      kept[i] = true;
      used += 2 + columns[i].width;
    }
  }

  std::string out;
  if (!header.empty()) append_wrapped(out, header, width, 2);
  auto line = [&](const std::string& name, const std::function<std::string(const Column&)>& text) {
    std::string l = pad(name, name_width, false);
    for (std::size_t i = 0; i < columns.size(); ++i) {
      if (kept[i]) l += "  " + pad(text(columns[i]), columns[i].width, true);
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  line("variant", [](const Column& c) { return c.title; });
  out += std::string(std::min(used, width), '-') + "\n";
  for (const GlanceRow& row : rows) {
    if (row.refusal) {
      append_wrapped(out, pad(row.variant, name_width, false) + "  refused: " + *row.refusal, width, name_width + 2);
    } else {
      line(row.variant, [&](const Column& c) { return c.cell(row); });
    }
  }

  const Ranking ranking = rank_rows(rows);
  if (!ranking.sentence.empty()) {
    out += "\n";
    append_wrapped(out, ranking.sentence, width, 2);
  }
  // Each insight once, with the variants it came from, in the order the rows first raise it.
  std::vector<std::pair<std::string, std::vector<std::string>>> insights;  // "code: text" → variants
  std::map<std::string, std::size_t> seen;
  for (const GlanceRow& row : rows) {
    for (const Insight& insight : row.insights) {
      const std::string key = insight.code + ": " + insight.text;
      auto [it, fresh] = seen.emplace(key, insights.size());
      if (fresh) insights.push_back({key, {}});
      insights[it->second].second.push_back(row.variant);
    }
  }
  if (!insights.empty()) out += "\nwhat the traces revealed\n";
  for (const auto& [text, variants] : insights) {
    std::string names;
    for (const std::string& v : variants) names += (names.empty() ? "" : ", ") + v;
    append_wrapped(out, "\u25b8 [" + names + "] " + text, width, 4);
  }
  return out;
}

}  // namespace attnprof::report
