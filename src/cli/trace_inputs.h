#pragma once
// The trace arguments of `inspect`: files, `-` (standard input) and directories. A directory
// stands for its .json and .json.gz files (not its subdirectories), in name order.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace attnprof::cli {

// The default of --max-traces: how many trace files one inspect reads, directories expanded.
constexpr std::int64_t kDefaultMaxTraces = 1024;

// The files `args` name. A UsageError (one line) for a directory with no trace file, one that
// cannot be listed, or more than `max_traces` files in all.
std::vector<std::string> expand_trace_inputs(const std::vector<std::string>& args, std::size_t max_traces);

}  // namespace attnprof::cli
