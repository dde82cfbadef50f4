#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/atomic_file.h"

namespace attnprof {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& tag) {
  const char* tmp = std::getenv("TMPDIR");
  fs::path dir = fs::path(tmp && *tmp ? tmp : "/tmp") / ("attnprof_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Runs `body` in a forked child (which must end the process itself) and returns the child's exit
// code, or -1 when it did not exit normally (a fatal signal).
template <class Body>
int exit_code_of_child(Body body) {
  const pid_t child = ::fork();
  if (child < 0) return -2;
  if (child == 0) {
    body();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A SIGINT raised inside a SignalDeferral (nested, as write_sweep_files may be) lets both files
// of the pair land, then exits 130 when the outermost scope ends, with no temporary left.
TEST(SignalDeferral, SignalInsideTheScopeTakesEffectAfterBothFilesLand) {
  const fs::path dir = fresh_dir("defer");
  EXPECT_EQ(exit_code_of_child([&] {
              install_signal_cleanup();
              {
                SignalDeferral outer;
                {
                  SignalDeferral inner;
                  std::raise(SIGINT);
                  write_file_atomically((dir / "a.csv").string(), "first\n");
                }
                write_file_atomically((dir / "b.json").string(), "second\n");
              }
              write_file_atomically((dir / "never.txt").string(), "after\n");
            }),
            128 + SIGINT);
  EXPECT_EQ(slurp(dir / "a.csv"), "first\n");
  EXPECT_EQ(slurp(dir / "b.json"), "second\n");
  EXPECT_FALSE(fs::exists(dir / "never.txt"));
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 2u);
  fs::remove_all(dir);
}

// Without a deferral the signal acts at once: the write after it never happens.
TEST(SignalDeferral, WithoutAScopeTheSignalActsAtOnce) {
  const fs::path dir = fresh_dir("nodefer");
  EXPECT_EQ(exit_code_of_child([&] {
              install_signal_cleanup();
              std::raise(SIGTERM);
              write_file_atomically((dir / "never.txt").string(), "after\n");
            }),
            128 + SIGTERM);
  EXPECT_FALSE(fs::exists(dir / "never.txt"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace attnprof
