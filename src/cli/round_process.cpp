#include "cli/round_process.h"

#include <attnprof/error.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/json_dump.h"

extern char** environ;

namespace attnprof::cli {
namespace {

std::vector<std::string>& command_line() {
  static std::vector<std::string> args;
  return args;
}

struct Pipe {
  int fd[2] = {-1, -1};
  Pipe() {
    if (pipe2(fd, O_CLOEXEC) != 0) throw Error(fmt::format("compare: pipe: {}", std::strerror(errno)));
  }
  ~Pipe() { close_both(); }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  void close_end(int i) {
    if (fd[i] >= 0) ::close(fd[i]);
    fd[i] = -1;
  }
  void close_both() { close_end(0), close_end(1); }
};

// Runs `args` (args[0] the program) to its end: its stdout, its stderr, and its wait status.
struct Finished {
  std::string out, err;
  int status = 0;
};

Finished run_to_end(const std::vector<std::string>& args) {
  Pipe out, err;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out.fd[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err.fd[1], STDERR_FILENO);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw Error(fmt::format("compare: cannot start a process for a round: {}", std::strerror(rc)));
  out.close_end(1);
  err.close_end(1);
  Finished done;
  pollfd fds[2] = {{out.fd[0], POLLIN, 0}, {err.fd[0], POLLIN, 0}};
  std::string* into[2] = {&done.out, &done.err};
  int open_fds = 2;
  char buffer[65536];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      throw Error(fmt::format("compare: poll: {}", std::strerror(errno)));
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        into[i]->append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  while (waitpid(pid, &done.status, 0) < 0) {
    if (errno != EINTR) throw Error(fmt::format("compare: waitpid: {}", std::strerror(errno)));
  }
  return done;
}

std::string last_line(const std::string& text) {
  std::size_t end = text.find_last_not_of("\r\n");
  if (end == std::string::npos) return "(nothing on stderr)";
  std::size_t begin = text.rfind('\n', end);
  return text.substr(begin == std::string::npos ? 0 : begin + 1, end - (begin == std::string::npos ? 0 : begin + 1) + 1);
}

std::string status_text(int status) {
  if (WIFEXITED(status)) return fmt::format("exit {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("signal {}", WTERMSIG(status));
  return fmt::format("status {}", status);
}

}  // namespace

void remember_command_line(int argc, char** argv) {
  command_line().assign(argv, argv + argc);
}

std::string round_samples_json(const std::vector<std::string>& variants, const std::vector<RoundSamples>& samples) {
  nlohmann::json j;
  j["pid"] = static_cast<long long>(getpid());
  j["samples"] = nlohmann::json::array();
  for (std::size_t i = 0; i < variants.size() && i < samples.size(); ++i) {
    j["samples"].push_back({{"variant", variants[i]}, {"times_ns", samples[i].times}, {"cpu_times_ns", samples[i].cpu_times}});
  }
  return dump_json(j) + "\n";
}

std::vector<RoundSamples> parse_round_samples(const std::string& json, const std::vector<std::string>& variants,
                                              int round) {
  const std::string what = fmt::format("compare: round {}'s process", round);
  nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("pid") || !j["pid"].is_number_integer() || !j.contains("samples") ||
      !j["samples"].is_array() || j["samples"].size() != variants.size()) {
    throw Error(fmt::format("{} printed no samples of {} variants", what, variants.size()));
  }
  const bool other = j["pid"].get<long long>() != static_cast<long long>(getpid());
  std::vector<RoundSamples> samples;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const nlohmann::json& s = j["samples"][i];
    auto numbers = [&](const char* key) {
      if (!s.is_object() || !s.contains(key) || !s[key].is_array() || s[key].empty())
        throw Error(fmt::format("{}: no {} for {}", what, key, variants[i]));
      std::vector<double> out;
      for (const nlohmann::json& x : s[key]) {
        if (!x.is_number() || !(x.get<double>() >= 0)) throw Error(fmt::format("{}: a bad {} for {}", what, key, variants[i]));
        out.push_back(x.get<double>());
      }
      return out;
    };
    if (!s.contains("variant") || s["variant"] != variants[i])
      throw Error(fmt::format("{}: sample {} is not {}'s", what, i, variants[i]));
    samples.push_back({numbers("times_ns"), numbers("cpu_times_ns"), other});
  }
  return samples;
}

RoundMeasurer rounds_in_fresh_processes(int rounds, bool progress) {
  return [rounds, progress](int round, const std::vector<std::string>& variants) {
    if (command_line().empty()) throw Error("compare: the command line was not kept for the rounds' processes");
    std::vector<std::string> args = command_line();
    std::string list;
    for (const std::string& v : variants) list += (list.empty() ? "" : ",") + v;
    args.insert(args.end(), {"--measure-round", std::to_string(round), "--round-variants", list});
    if (progress) std::fprintf(stderr, "round %d of %d (a fresh process)...\n", round, rounds);
    const Finished done = run_to_end(args);
    if (!WIFEXITED(done.status) || WEXITSTATUS(done.status) != 0) {
      throw Error(fmt::format("compare: round {}'s process failed ({}): {}", round, status_text(done.status),
                              last_line(done.err)));
    }
    return parse_round_samples(done.out, variants, round);
  };
}

}  // namespace attnprof::cli
