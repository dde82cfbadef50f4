#pragma once
// Library errors name parameters (RunOptions and AttentionSpec field names: "head_dim 96: ...");
// the command line names flags. One table maps each parameter to its flag, and the CLI rewrites
// every message it prints through it.
#include <string>
#include <string_view>

namespace attnprof::cli {

// The flag for a parameter name ("head_dim" → "--head-dim"), or empty when none takes it.
std::string_view flag_for_parameter(std::string_view parameter);

// `message` with parameter names replaced by their flags. A name with an underscore (head_dim,
// seq_q, out_dir) is replaced wherever it stands as a whole word; a one-word name (batch, dtype,
// device) only where it opens the message or a clause (after ": ", "; " or ", "), so the English
// words "heads" or "device" elsewhere in a sentence stay as they are.
std::string name_flags(std::string_view message);

}  // namespace attnprof::cli
