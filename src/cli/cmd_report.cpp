// attnprof report DIR: one self-contained HTML file from DIR's newest compare and sweep results.
#include <attnprof/error.h>

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "cli/trace_limit_flags.h"
#include "cli/shape_flags.h"
#include "core/atomic_file.h"
#include "core/utf8.h"
#include "report/html_report.h"
#include "trace/reader.h"

namespace attnprof::cli {
namespace {

struct ReportArgs {
  std::string dir;
  std::optional<std::string> out;  // absent: DIR/report.html
  std::string title = "attnprof report";
  trace::ReadLimits limits;
};

// --out is checked before anything is read or drawn: not a directory, in a writable directory,
// and none of the report's inputs.
void check_report_out(const std::string& out, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(out, ec)) {
    throw UsageError(fmt::format("--out: '{}' is a directory; allowed: the name of the HTML file to write", out));
  }
  const fs::path parent = fs::path(out).parent_path();
  check_writable_directory(parent.empty() ? std::string(".") : parent.string(), "--out");
  for (const char* kind : {"compare", "sweep"}) {
    int count = 0;
    const fs::path path = report::results_file(dir, kind, count);
    if (!path.empty() && fs::exists(out, ec) && fs::exists(path, ec) && fs::equivalent(out, path, ec)) {
      throw UsageError(fmt::format("--out: '{}' is {}, an input of this report; allowed: another file name", out,
                                   path.string()));
    }
  }
}

int run_report_command(const ReportArgs& args) {
  const std::string out = args.out ? *args.out : args.dir + "/report.html";
  check_report_out(out, args.dir);
  report::ReportInputs inputs = report::read_report_inputs(args.dir);
  for (const char* kind : {"compare", "sweep"}) {  // results of several configurations: which one is drawn
    int count = 0;
    const std::string path = report::results_file(args.dir, kind, count);
    if (count > 1) {
      std::fprintf(stderr, "attnprof: report: %s holds %d %s results; drawing the newest, %s\n",
                   printable(args.dir).c_str(), count, kind, printable(path).c_str());
    }
  }
  inputs.title = args.title;
  // A compare row without a timeline (older results) gets one from its trace, found as written
  // or relative to DIR; a trace that cannot be read leaves the row without a timeline.
  auto load_trace = [&](const std::string& path) -> std::optional<trace::Trace> {
    for (const std::filesystem::path& candidate : {std::filesystem::path(path), std::filesystem::path(args.dir) / path}) {
      std::error_code ec;
      if (!std::filesystem::is_regular_file(candidate, ec)) continue;  // read_report_inputs refused FIFOs
      try {
        return trace::read_trace_file(candidate.string(), args.limits);
      } catch (const trace::LimitExceeded&) {
        throw;  // refused, naming the flag that raises the limit
      } catch (const UsageError& e) {
        std::fprintf(stderr, "attnprof: report: no timeline from %s: %s\n", printable(candidate.string()).c_str(),
                     printable(e.what()).c_str());
      }
    }
    return std::nullopt;
  };
  std::string html;
  try {
    html = report::render_html_report(inputs, load_trace);
  } catch (const nlohmann::json::exception& e) {  // a value read_report_inputs's checks let through
    throw UsageError(fmt::format("report: {}: {}", args.dir, report::json_error_text(e.what())));
  }
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
  sub->add_option("dir", args->dir, "Directory holding compare and/or sweep results (the newest of each is drawn)")
      ->required()
      ->check(non_empty_path());
  sub->add_option("--out", args->out, "HTML file to write (default: DIR/report.html)")->check(non_empty_path());
  sub->add_option("--title", args->title, "Title of the report")->capture_default_str();
  add_trace_limit_flags(sub, args->limits);
  return [args] { return naming_limit_flags([&] { return run_report_command(*args); }); };
}

}  // namespace attnprof::cli
