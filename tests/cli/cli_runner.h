#pragma once
// Runs the attnprof binary (ATTNPROF_BIN) in a fresh empty working directory and captures its
// exit code, stdout and stderr (kept outside that directory, so it can be checked for files).
#include <string>
#include <vector>

namespace attnprof::testing {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
  std::string work_dir;             // the command's working directory
  std::vector<std::string> files;   // regular files left under work_dir afterwards (relative)
};

std::string attnprof_binary();
std::string shell_quote(const std::string& arg);
// `args` are passed to the binary as they are; "{work}" in an argument is replaced by work_dir.
CliResult run_cli(const std::vector<std::string>& args, int timeout_seconds = 120);
std::string make_temp_dir();
// The bytes of a file ("" when it cannot be read).
std::string slurp(const std::string& path);

}  // namespace attnprof::testing
