#include "cli/trace_limit_flags.h"

#include <attnprof/error.h>
#include <fmt/format.h>

#include <charconv>
#include <cstring>
#include <string>

namespace attnprof::cli {
namespace {

struct LimitFlag {
  const char* flag;
  const char* field;  // the ReadLimits field, as LimitExceeded::limit() names it
  std::uint64_t trace::ReadLimits::*member;
  const char* help;
};

constexpr LimitFlag kLimitFlags[] = {
    {"--max-string-bytes", "max_string_bytes", &trace::ReadLimits::max_string_bytes,
     "Longest JSON string (and arg value kept as JSON text) a trace may hold, in bytes"},
    {"--max-number-chars", "max_number_chars", &trace::ReadLimits::max_number_chars,
     "Longest JSON number a trace may hold, in characters"},
    {"--max-depth", "max_depth", &trace::ReadLimits::max_depth, "Deepest nesting of JSON arrays/objects in a trace"},
    {"--max-trace-bytes", "max_trace_bytes", &trace::ReadLimits::max_trace_bytes,
     "Most bytes of JSON text read from one trace (after gunzip)"},
    {"--max-events", "max_events", &trace::ReadLimits::max_events, "Most traceEvents entries in one trace"},
};

}  // namespace

void add_trace_limit_flags(CLI::App* sub, trace::ReadLimits& limits) {
  for (const LimitFlag& f : kLimitFlags) {
    // Checked as text: CLI11 would read "-1" as 2^64 - 1.
    const CLI::Validator whole_number(
        [](std::string& text) -> std::string {
          std::uint64_t v = 0;
          auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
          if (text.empty() || text[0] < '0' || text[0] > '9' || ec != std::errc() || end != text.data() + text.size() ||
              v == 0)
            return "'" + text + "' is not a whole number from 1 to 18446744073709551615";
          return "";
        },
        "N >= 1");
    sub->add_option(f.flag, limits.*(f.member), f.help)
        ->capture_default_str()
        ->check(whole_number)
        ->group("Trace limits");
  }
}

int naming_limit_flags(const std::function<int()>& command) {
  try {
    return command();
  } catch (const trace::LimitExceeded& e) {
    for (const LimitFlag& f : kLimitFlags)
      if (std::strcmp(f.field, e.limit()) == 0) throw UsageError(fmt::format("{}; {} raises it", e.detail(), f.flag));
    throw;
  }
}

}  // namespace attnprof::cli
