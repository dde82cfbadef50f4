#pragma once
// Runs the attnprof binary (ATTNPROF_BIN) in a fresh empty working directory and captures its
// exit code, stdout and stderr (kept outside that directory, so it can be checked for files).
#include <optional>
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
// `args` are passed to the binary as they are; "{work}" in an argument is replaced by work_dir. The
// child has COLUMNS only when a test set it (cli_runner.cpp drops the one the suite inherited).
CliResult run_cli(const std::vector<std::string>& args, int timeout_seconds = 120);
std::string make_temp_dir();
// The bytes of a file ("" when it cannot be read).
std::string read_whole_file(const std::string& path);
// DIR/KIND_<configuration>.EXT, the one results file of that kind compare or sweep left in DIR
// (compare_….json, sweep_….csv, sweep_….json; run/trace_stem.h names them); "" unless exactly one.
std::string results_path(const std::string& dir, const std::string& kind, const std::string& ext);

// Sets (or, for nullptr, unsets) an environment variable of this process, which the binary run by
// run_cli inherits, and puts the old value back when the scope ends.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace attnprof::testing
