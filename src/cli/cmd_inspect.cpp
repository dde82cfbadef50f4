// attnprof inspect TRACE...: the key_averages table and the per-step summary of any Kineto trace.
#include <attnprof/error.h>
#include <fmt/format.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/inspect_what_if.h"
#include "cli/shape_flags.h"
#include "cli/trace_inputs.h"
#include "cli/trace_limit_flags.h"
#include "report/attention_compare.h"
#include "report/attention_render.h"
#include "core/json_dump.h"
#include "core/utf8.h"
#include "report/expect.h"
#include "report/insights.h"
#include "report/key_averages.h"
#include "report/named_ranges.h"
#include "report/range_rows.h"
#include "report/steps.h"
#include "report/timeline.h"
#include "trace/json_text.h"
#include "trace/reader.h"

namespace attnprof::cli {
namespace {

struct InspectOptions {
  std::vector<std::string> traces;
  std::string sort_by;  // empty: device_time_total when the trace has device columns, else cpu_time_total
  int row_limit = 100;
  std::string format = "text";
  std::string expect;     // the guessed work of one forward
  bool insights = false;  // force the insight rules on a trace of any size
  bool no_insights = false;
  trace::ReadLimits limits;
  bool no_double_count = false;  // report::DeviceTime::once instead of torch's booking
  WhatIfFlags what_if;
  bool diff = false;             // BEFORE AFTER side by side (report/attention_compare.h)
  std::int64_t max_traces = kDefaultMaxTraces;
  std::vector<std::string> ranges;  // --range: per-range work reads these instead of attn_fwd
};

// The insight rules and --expect need the whole Trace (footprints, op chains), not the compact
// timeline; above this many events they run only when asked (--insights), and say so.
constexpr std::size_t kInsightEventLimit = 1000000;

std::string us(std::int64_t ns) {
  std::string s;
  trace::append_us(s, ns);
  return s;
}

std::string format_time(std::int64_t ns) {
  double v = static_cast<double>(ns) / 1000.0;
  if (v >= 1e6) return fmt::format("{:.3f}s", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.3f}ms", v / 1e3);
  return fmt::format("{:.3f}us", v);
}

std::string steps_text(const std::vector<report::StepSummary>& steps, const std::string& device_label) {
  std::string kernel_word = device_label == "CPU kernel" ? "CPU kernels" : "Kernels";
  std::string out = fmt::format("{:<20}  {:>12}  {:>8}  {:>8}  {:>14}  {:>12}\n", "Step", kernel_word, "Memcpy",
                                "Memset", "Device time", "CPU time");
  for (const auto& s : steps)
    out += fmt::format("{:<20}  {:>12}  {:>8}  {:>8}  {:>14}  {:>12}\n", printable(s.name), s.kernels, s.memcpy,
                       s.memset, format_time(s.device_time_ns), format_time(s.cpu_time_ns));
  if (steps.empty()) out += "(no ProfilerStep#N ranges in this trace)\n";
  return out;
}

std::string inspect_json(const std::string& path, const report::KeyAverages& table,
                         const std::vector<report::StepSummary>& steps, const report::ForwardSummary& fw) {
  std::string out = "{\"trace\": ";
  trace::append_json_string(out, path);
  out += ", \"device_label\": ";
  trace::append_json_string(out, table.device_label);
  out += ",\n \"steps\": [";
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const auto& s = steps[i];
    out += i ? ",\n  {" : "\n  {";
    out += "\"name\": ";
    trace::append_json_string(out, s.name);
    out += fmt::format(", \"kernels\": {}, \"memcpy\": {}, \"memset\": {}, \"device_time_us\": {}, \"cpu_time_us\": {}}}",
                       s.kernels, s.memcpy, s.memset, us(s.device_time_ns), us(s.cpu_time_ns));
  }
  out += steps.empty() ? "],\n" : "\n ],\n";
  out += fmt::format(" \"totals\": {{\"self_cpu_us\": {}, \"self_device_us\": {}}},\n", us(table.self_cpu_total_ns),
                     us(table.self_device_total_ns));
  // The attn_fwd ranges (or the --range names); absent from a trace without any, whose means
  // would be zeros that read as measurements, as the text's attn_fwd line is.
  if (!fw.forwards.empty()) {
    out += fmt::format(
        " \"forwards\": {{\"count\": {}, \"kernels_per_forward\": {}, \"memcpy_per_forward\": {}, "
        "\"memset_per_forward\": {}, \"kernel_time_per_forward_us\": {:.3f}, \"device_time_per_forward_us\": "
        "{:.3f}, \"cpu_time_per_forward_us\": {:.3f}}},\n",
        fw.forwards.size(), fw.kernels_per_forward, fw.memcpy_per_forward, fw.memset_per_forward,
        fw.kernel_time_per_forward_ns / 1000.0, fw.device_time_per_forward_ns / 1000.0,
        fw.cpu_time_per_forward_ns / 1000.0);
  }
  out += " \"key_averages\": " + report::render_json_rows(table) + "}";
  return out;
}

int run_inspect(const InspectOptions& o) {
  if (o.format != "text" && o.format != "json")
    throw UsageError(fmt::format("--format: unknown format '{}'; allowed: text, json", o.format));
  if (!o.expect.empty()) (void)report::parse_expect(o.expect);  // a bad word fails before reading
  const std::optional<WhatIfOptions> what_if_options = o.what_if.to_options();
  if (o.max_traces < 1) throw UsageError(fmt::format("--max-traces: must be at least 1 (got {})", o.max_traces));
  const auto paths = expand_trace_inputs(o.traces, static_cast<std::size_t>(o.max_traces));
  if (o.diff && paths.size() != 2)
    throw UsageError(fmt::format("--diff: {} trace files; it takes exactly two, BEFORE and AFTER", paths.size()));
  std::vector<std::string> outputs;
  std::vector<report::RankInput> ranks;  // per trace: its attention totals and distributedInfo rank
  for (const std::string& path : paths) {
    // One streaming pass (a pipe or FIFO can be read only once): every event goes into the compact
    // timeline; the whole Trace the insights and --expect need is kept alongside while the
    // timeline has at most kInsightEventLimit events (always with --insights or --expect).
    report::Timeline t;
    trace::Trace full;
    const bool want_full = !o.no_insights || !o.expect.empty();
    const bool force_full = o.insights || !o.expect.empty();
    bool keep_full = want_full;
    trace::read_trace_file(
        path, full,
        [&](trace::Event& e) {
          t.add(e);
          if (!keep_full) return;
          if (!force_full && t.events().size() > kInsightEventLimit) {
            keep_full = false;  // also stops keeping the flows
            std::vector<trace::Event>().swap(full.events);
            return;
          }
          full.events.push_back(std::move(e));
        },
        /*keep_flows=*/keep_full, o.limits);
    std::string sort_by = o.sort_by;
    if (sort_by.empty()) sort_by = report::has_device_work(t) ? "device_time_total" : "cpu_time_total";
    const auto device_time = o.no_double_count ? report::DeviceTime::once : report::DeviceTime::torch;
    report::KeyAverages table = report::key_averages(t, sort_by, o.row_limit, device_time);
    auto steps = report::summarize_steps(t);
    if (!o.ranges.empty()) report::check_range_names(t, o.ranges, path);
    const auto& range_names = o.ranges.empty() ? report::default_range_names() : o.ranges;
    auto fw = report::summarize_forwards(t, range_names);
    report::AttentionSummary attention = report::find_attention(t);
    std::optional<report::WhatIf> what_if;
    if (what_if_options) what_if = inspect_what_if(*what_if_options, full, t, attention, steps, o.format == "text");
    ranks.push_back({path, full.rank_recorded ? std::optional(full.rank) : std::nullopt,
                     report::attention_totals(attention)});
    std::vector<report::Insight> insights;
    std::optional<report::ExpectResult> expected;
    std::string insights_note;
    if (keep_full) {
      if (!o.no_insights) insights = report::derive_insights(full, {}, range_names);
      if (!o.expect.empty()) expected = report::compare_expect(report::parse_expect(o.expect), full);
    } else if (want_full) {
      insights_note = fmt::format("insights not computed: {} events is over {} (they need the whole trace in memory); "
                                  "--insights computes them anyway",
                                  t.events().size(), kInsightEventLimit);
    }
    if (o.format == "json") {
      std::string json = inspect_json(path, table, steps, fw);
      json.pop_back();  // reopen the object for the booking, the attention calls, the insights and --expect
      json += fmt::format(",\n \"device_time\": \"{}\"", o.no_double_count ? "once" : "torch");
      if (!o.ranges.empty()) json += ",\n \"ranges\": " + report::range_rows_json(t, o.ranges);
      json += ",\n \"attention\": " + report::attention_json(attention);
      if (what_if) json += ",\n \"what_if\": " + report::what_if_json(*what_if);
      json += ",\n \"insights\": " + dump_json(report::insights_json(insights));
      if (!insights_note.empty()) {
        json += ", \"insights_note\": ";
        trace::append_json_string(json, insights_note);
      }
      if (expected) json += ",\n \"expect\": " + dump_json(report::expect_json(*expected));
      outputs.push_back(json + "}");
    } else {
      std::string text;
      if (paths.size() > 1) text += fmt::format("== {} ==\n", path);
      if (std::string a = report::attention_text(attention); !a.empty()) text += a + "\n";
      if (what_if) text += report::what_if_text(*what_if) + "\n";
      text += report::render_text(table);
      if (table.total_rows > table.rows.size())
        text += fmt::format("({} of {} rows; --row-limit -1 shows all)\n", table.rows.size(), table.total_rows);
      if (!table.device_label.empty())
        text += o.no_double_count ? "(--no-double-count: each device time on its own row only)\n"
                                  : "(torch's booking: a launching op's Self time repeats its device work; "
                                    "--no-double-count counts it once)\n";
      text += "\n" + steps_text(steps, table.device_label);
      if (!o.ranges.empty()) {
        text += "\n" + report::range_rows_text(t, o.ranges);
      } else if (!fw.forwards.empty()) {
        text += fmt::format(
            "\nattn_fwd: {} forwards; per forward {:.2f} kernels, {:.2f} memcpy, {:.2f} memset, device time {}, CPU time "
            "{}\n",
            fw.forwards.size(), fw.kernels_per_forward, fw.memcpy_per_forward, fw.memset_per_forward,
            format_time(static_cast<std::int64_t>(fw.device_time_per_forward_ns)),
            format_time(static_cast<std::int64_t>(fw.cpu_time_per_forward_ns)));
      }
      if (!insights.empty()) text += "\n" + report::insights_text(insights);
      if (!insights_note.empty()) text += "\n" + insights_note + "\n";
      if (expected) text += "\n" + report::expect_text(*expected);
      outputs.push_back(std::move(text));
    }
  }
  // Everything is computed before anything is printed: a bad second file leaves no partial output.
  if (o.format == "json") {
    if (outputs.size() == 1) {
      std::fputs((outputs[0] + "\n").c_str(), stdout);
    } else {
      std::string all = o.diff ? "{\"diff\": " + report::attention_diff_json(paths[0], ranks[0].totals, paths[1],
                                                                              ranks[1].totals)
                               : "{\"ranks\": " + report::ranks_json(ranks);
      all += ",\n\"traces\": [";
      for (std::size_t i = 0; i < outputs.size(); ++i) all += (i ? ",\n" : "\n") + outputs[i];
      std::fputs((all + "\n]}\n").c_str(), stdout);
    }
  } else {
    if (o.diff)
      outputs.insert(outputs.begin(), report::attention_diff_text(paths[0], ranks[0].totals, paths[1], ranks[1].totals));
    else if (outputs.size() > 1)
      outputs.push_back("== ranks ==\n" + report::ranks_text(ranks));
    // The last boundary before the terminal: whatever a table let through, no control character
    // but the line ends reaches it, and a NUL cannot end the text early.
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      const std::string text = (i ? "\n" : "") + printable(outputs[i], Newlines::keep);
      std::fwrite(text.data(), 1, text.size(), stdout);
    }
  }
  return 0;
}

}  // namespace

Command add_inspect(CLI::App& app) {
  auto options = std::make_shared<InspectOptions>();
  CLI::App* sub = app.add_subcommand("inspect", "Print the key_averages table and per-step summary of Kineto traces "
                                                 "(PyTorch's or attnprof's, .json or .json.gz)");
  sub->add_option("traces", options->traces,
                  "Trace files (several: a per-rank table); a directory stands for its .json and .json.gz files; "
                  "- reads standard input")->required();
  sub->add_option("--sort-by", options->sort_by,
                  "Sort column: cpu_time_total, self_cpu_time_total, cpu_time, device_time_total (= cuda_time_total), "
                  "self_device_time_total, device_time, count, name (default: device_time_total when the trace has "
                  "device work, else cpu_time_total)");
  sub->add_option("--row-limit", options->row_limit, "Rows of the table; -1 for all")->default_val(100);
  sub->add_option("--format", options->format, "text or json")->default_val("text");
  sub->add_option("--expect", options->expect,
                  "guess one forward's work first (e.g. gemm,mul,masked_fill,softmax,gemm); the trace checks it");
  CLI::Option* force = sub->add_flag("--insights", options->insights,
                                     "derive insights even for traces over a million events");
  sub->add_flag("--no-insights", options->no_insights, "skip the insight rules")->excludes(force);
  sub->add_flag("--no-double-count", options->no_double_count,
                "count each device time once, on its own row: no Self time on the op that launched it and no "
                "gpu_user_annotation rows, so Self % sums to 100% (default: torch's booking)");
  options->what_if.add_to(*sub);
  sub->add_flag("--diff", options->diff,
                "two traces, BEFORE AFTER: their attention and step GPU time side by side with the change");
  sub->add_option("--max-traces", options->max_traces,
                  "most trace files one inspect reads, directories expanded")
      ->default_val(kDefaultMaxTraces)
      ->check(strict_integer());
  sub->add_option("--range", options->ranges,
                  "read the ranges of this name (a record_function/NVTX range, or a module as torch records it) "
                  "instead of attn_fwd for the per-range rows and insights; repeatable")
      ->allow_extra_args(false);  // one name per --range: the traces that follow stay traces
  add_trace_limit_flags(sub, options->limits);
  return [options] { return naming_limit_flags([&] { return run_inspect(*options); }); };
}

}  // namespace attnprof::cli
