#include "cli/cli_runner.h"

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace attnprof::testing {

namespace {
// The table width a child lays out for is the one a test sets (ScopedEnv), never the width of the
// terminal the suite was started from: COLUMNS inherited by this process is dropped before any
// test runs, so run_cli's children (and any a test forks) see it only when a test sets it.
[[maybe_unused]] const bool inherited_columns_dropped = [] {
  unsetenv("COLUMNS");
  return true;
}();
}  // namespace

std::string attnprof_binary() {
  const char* bin = std::getenv("ATTNPROF_BIN");
  if (bin == nullptr) throw std::runtime_error("ATTNPROF_BIN is not set (ctest sets it)");
  return bin;
}

std::string shell_quote(const std::string& arg) {
  std::string quoted = "'";
  for (char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string make_temp_dir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "attnprof-test-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return pattern;
}

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string results_path(const std::string& dir, const std::string& kind, const std::string& ext) {
  std::vector<std::string> found;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(kind + "_", 0) == 0 && name.size() > ext.size() + 1 &&
        name.compare(name.size() - ext.size() - 1, std::string::npos, "." + ext) == 0) {
      found.push_back(it->path().string());
    }
  }
  return found.size() == 1 ? found[0] : std::string();
}

namespace {
std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
  return s;
}
}  // namespace

CliResult run_cli(const std::vector<std::string>& args, int timeout_seconds) {
  CliResult result;
  result.work_dir = make_temp_dir();
  std::string capture = make_temp_dir();
  std::string command = "cd " + shell_quote(result.work_dir) + " && timeout " + std::to_string(timeout_seconds) +
                        " " + shell_quote(attnprof_binary());
  for (const std::string& a : args) command += " " + shell_quote(replace_all(a, "{work}", result.work_dir));
  command += " >" + shell_quote(capture + "/out") + " 2>" + shell_quote(capture + "/err");
  int status = std::system(command.c_str());
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = read_whole_file(capture + "/out");
  result.err = read_whole_file(capture + "/err");
  std::filesystem::remove_all(capture);
  for (auto& entry : std::filesystem::recursive_directory_iterator(result.work_dir)) {
    if (!entry.is_directory()) {
      result.files.push_back(std::filesystem::relative(entry.path(), result.work_dir).string());
    }
  }
  return result;
}

ScopedEnv::ScopedEnv(const char* name, const char* value) : name_(name) {
  if (const char* old = std::getenv(name)) old_ = old;
  if (value != nullptr) {
    setenv(name, value, 1);
  } else {
    unsetenv(name);
  }
}

ScopedEnv::~ScopedEnv() {
  if (old_) {
    setenv(name_.c_str(), old_->c_str(), 1);
  } else {
    unsetenv(name_.c_str());
  }
}

}  // namespace attnprof::testing
