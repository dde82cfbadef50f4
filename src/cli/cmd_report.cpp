// attnprof report DIR: one self-contained HTML file from DIR/compare.json and DIR/sweep.json.
#include <attnprof/error.h>

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "core/atomic_file.h"
#include "core/utf8.h"
#include "report/html_report.h"
#include "trace/reader.h"

namespace attnprof::cli {
namespace {

struct ReportArgs {
  std::string dir;
  std::string out;  // empty: DIR/report.html
  std::string title = "attnprof report";
};

int run_report_command(const ReportArgs& args) {
  report::ReportInputs inputs = report::read_report_inputs(args.dir);
  inputs.title = args.title;
  const std::string out = args.out.empty() ? args.dir + "/report.html" : args.out;
  // A compare row without a timeline (older results) gets one from its trace, found as written
  // or relative to DIR; a trace that cannot be read leaves the row without a timeline.
  auto load_trace = [&](const std::string& path) -> std::optional<trace::Trace> {
    for (const std::filesystem::path& candidate : {std::filesystem::path(path), std::filesystem::path(args.dir) / path}) {
      if (!std::filesystem::exists(candidate)) continue;
      try {
        return trace::read_trace_file(candidate.string());
      } catch (const UsageError& e) {
        std::fprintf(stderr, "attnprof: report: no timeline from %s: %s\n", printable(candidate.string()).c_str(),
                     printable(e.what()).c_str());
      }
    }
    return std::nullopt;
  };
  const std::string html = report::render_html_report(inputs, load_trace);
  install_signal_cleanup();
  write_file_atomically(out, html, "--out");
  std::printf("wrote %s (%.1f KiB%s%s)\n", out.c_str(), static_cast<double>(html.size()) / 1024.0,
              inputs.compare ? ", compare" : "", inputs.sweep ? ", sweep" : "");
  return 0;
}

}  // namespace

Command add_report(CLI::App& app) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* sub = app.add_subcommand("report", "Write one self-contained HTML report from a compare/sweep directory");
  sub->add_option("dir", args->dir, "Directory holding compare.json and/or sweep.json")->required();
  sub->add_option("--out", args->out, "HTML file to write (default: DIR/report.html)");
  sub->add_option("--title", args->title, "Title of the report")->capture_default_str();
  return [args] { return run_report_command(*args); };
}

}  // namespace attnprof::cli
