#pragma once
// A forked child of a test: killed (SIGKILL) and reaped when its guard's scope ends, unless the
// test reaped it, so an assertion that returns early never leaves it looping, paused or writing
// after the test; and whether a child catches a signal yet (its handler installed), read from
// /proc/PID/status, so a test signals it when that is known rather than after a guessed sleep.
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

namespace attnprof::testing {

class ChildGuard {
 public:
  explicit ChildGuard(pid_t pid) : pid_(pid) {}
  ~ChildGuard() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  ChildGuard(const ChildGuard&) = delete;
  ChildGuard& operator=(const ChildGuard&) = delete;

  pid_t pid() const { return pid_; }
  // The child's wait status once it has exited (it is then reaped: the guard has nothing left to
  // kill); nullopt while it runs.
  std::optional<int> try_wait() {
    int status = 0;
    if (pid_ <= 0 || ::waitpid(pid_, &status, WNOHANG) != pid_) return std::nullopt;
    pid_ = -1;
    return status;
  }
  // try_wait until the child exits or `limit` passes (nullopt: still running, left to the guard).
  std::optional<int> wait_for(std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
      if (std::optional<int> status = try_wait()) return status;
      if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

 private:
  pid_t pid_;
};

// True when process `pid` runs the executable `exe` (it has exec'd: a forked copy of the test,
// which inherits the test's handlers, does not count) and has a handler installed for `signal`:
// the signal's bit in the SigCgt mask of /proc/PID/status.
inline bool catches_signal(pid_t pid, const std::filesystem::path& exe, int signal) {
  std::error_code ec;
  const std::string proc = "/proc/" + std::to_string(pid);
  if (std::filesystem::read_symlink(proc + "/exe", ec) != exe || ec) return false;
  std::ifstream status(proc + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("SigCgt:", 0) != 0) continue;
    const std::uint64_t caught = std::stoull(line.substr(7), nullptr, 16);
    return (caught >> (signal - 1)) & 1u;
  }
  return false;
}

}  // namespace attnprof::testing
