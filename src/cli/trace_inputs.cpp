#include "cli/trace_inputs.h"

#include <attnprof/error.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace attnprof::cli {
namespace {

bool trace_name(const std::string& name) {
  auto ends = [&](const std::string& suffix) {
    return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends(".json") || ends(".json.gz");
}

[[noreturn]] void too_many(std::size_t max_traces) {
  throw UsageError(fmt::format("inspect: more than {} trace files; --max-traces N raises the limit", max_traces));
}

}  // namespace

std::vector<std::string> expand_trace_inputs(const std::vector<std::string>& args, std::size_t max_traces) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  if (std::count(args.begin(), args.end(), std::string("-")) > 1)
    throw UsageError("inspect: '-' (standard input) given more than once; it can be read once: name the other "
                     "traces by their files");
  for (const std::string& arg : args) {
    std::error_code ec;
    if (arg == "-" || !fs::is_directory(arg, ec)) {
      if (out.size() == max_traces) too_many(max_traces);
      out.push_back(arg);
      continue;
    }
    std::vector<std::string> files;
    fs::directory_iterator it(arg, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      std::error_code kind;  // a link that leads nowhere is kept: reading it names the problem
      if (!trace_name(name) || it->is_directory(kind)) continue;
      // Counted as listed: a directory of a million files stops at the limit.
      if (out.size() + files.size() == max_traces) too_many(max_traces);
      files.push_back(it->path().string());
    }
    if (ec) throw UsageError(fmt::format("{}: cannot list the directory: {}", arg, ec.message()));
    if (files.empty()) throw UsageError(fmt::format("{}: no .json or .json.gz trace file in the directory", arg));
    std::sort(files.begin(), files.end());
    out.insert(out.end(), files.begin(), files.end());
  }
  return out;
}

}  // namespace attnprof::cli
