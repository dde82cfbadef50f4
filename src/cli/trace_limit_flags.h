#pragma once
// The trace reader's limits as flags of the commands that read traces (inspect, report): each
// trace::ReadLimits field is a --max-... flag, and a file over a limit is refused naming the flag.
#include <CLI/CLI.hpp>

#include <functional>

#include "trace/limits.h"

namespace attnprof::cli {

// Adds --max-string-bytes, --max-number-chars, --max-depth, --max-trace-bytes and --max-events
// to `sub`, each filling its field of `limits` (default: the field's value).
void add_trace_limit_flags(CLI::App* sub, trace::ReadLimits& limits);

// Runs `command`; a trace::LimitExceeded becomes a UsageError whose one line ends with the flag
// that raises the limit.
int naming_limit_flags(const std::function<int()>& command);

}  // namespace attnprof::cli
