#pragma once
// Library errors name parameters (RunOptions and AttentionSpec field names: "head_dim 96: ...");
// the command line names flags. A table maps each parameter to its flag, and the CLI rewrites
// every message it prints through it: run, compare, sweep and devices through the run table;
// inspect and report through their own, which holds none of the shape and schedule words.
#include <string>
#include <string_view>
#include <vector>

namespace attnprof::cli {

enum class FlagTable { run, inspect };

// The flag for a parameter name ("head_dim" → "--head-dim"), or empty when none takes it.
std::string_view flag_for_parameter(std::string_view parameter, FlagTable table = FlagTable::run);

// `message` with parameter names replaced by their flags. A name with an underscore (head_dim,
// seq_q, out_dir) is replaced wherever it stands as a whole word; a one-word name (batch, dtype,
// device) only where it opens the message or a clause (after ": ", "; " or ", "), so the English
// words "heads" or "device" elsewhere in a sentence stay as they are. Every occurrence of a
// `verbatim` string (the command line's own arguments: paths, values) is copied untouched, so a
// file named "batch" or "head_dim" is never renamed.
std::string name_flags(std::string_view message, FlagTable table = FlagTable::run,
                       const std::vector<std::string>& verbatim = {});

}  // namespace attnprof::cli
