#include "core/atomic_file.h"

#include <attnprof/error.h>
#include <fmt/format.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <climits>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <string_view>

namespace attnprof {
namespace {

// Pending temporaries, kept in fixed buffers so the signal handler can unlink them without
// allocating (unlink and _exit are async-signal-safe).
constexpr int kSlots = 64;
constexpr std::size_t kPathMax = 4096;
std::array<std::array<char, kPathMax>, kSlots> g_pending;
std::array<std::atomic<bool>, kSlots> g_in_use{};
std::mutex g_slot_mutex;

int claim_slot(const std::string& path) {
  std::lock_guard lock(g_slot_mutex);
  if (path.size() + 1 > kPathMax) return -1;
  for (int i = 0; i < kSlots; ++i) {
    if (!g_in_use[i].load()) {
      std::memcpy(g_pending[i].data(), path.c_str(), path.size() + 1);
      g_in_use[i].store(true);
      return i;
    }
  }
  return -1;
}

void release_slot(int slot) {
  if (slot >= 0) g_in_use[slot].store(false);
}

// While a SignalDeferral is alive a signal is recorded, not acted on; the scope's end acts on it.
std::atomic<int> g_deferral_depth{0};
std::atomic<int> g_deferred_signal{0};

extern "C" void cleanup_and_exit(int signal_number) {
  if (g_deferral_depth.load() > 0) {
    g_deferred_signal.store(signal_number);
    return;
  }
  for (int i = 0; i < kSlots; ++i) {
    if (g_in_use[i].load()) ::unlink(g_pending[i].data());
  }
  ::_exit(128 + signal_number);
}

// ".NAME.tmp.PID.N" when that fits one directory entry (NAME_MAX bytes), else the same with NAME
// replaced by a 64-bit FNV-1a hash of it in hex: every name that is legal gets a temporary.
std::string temp_name(const std::string& name, long pid, unsigned n) {
  std::string temp = fmt::format(".{}.tmp.{}.{}", name, pid, n);
  if (temp.size() <= NAME_MAX) return temp;
  std::uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : name) hash = (hash ^ c) * 1099511628211ull;
  return fmt::format(".{:016x}.tmp.{}.{}", hash, pid, n);
}

// The PID of a temporary's name ".NAME.tmp.PID.N" (NAME may hold dots), or 0 for any other name.
long temp_owner(std::string_view name) {
  if (name.size() < 2 || name.front() != '.') return 0;
  const std::size_t last_dot = name.rfind('.');
  const std::size_t pid_dot = last_dot == 0 ? std::string_view::npos : name.rfind('.', last_dot - 1);
  if (pid_dot == std::string_view::npos || pid_dot < 5 || name.substr(pid_dot - 4, 4) != ".tmp") return 0;
  auto all_digits = [](std::string_view digits) {
    return !digits.empty() && digits.find_first_not_of("0123456789") == std::string_view::npos;
  };
  const std::string_view pid_text = name.substr(pid_dot + 1, last_dot - pid_dot - 1);
  if (!all_digits(pid_text) || !all_digits(name.substr(last_dot + 1))) return 0;
  long pid = 0;
  auto [end, ec] = std::from_chars(pid_text.data(), pid_text.data() + pid_text.size(), pid);
  return ec == std::errc() && end == pid_text.data() + pid_text.size() ? pid : 0;
}

}  // namespace

void remove_stale_temporaries(const std::string& dir) {
  DIR* stream = ::opendir(dir.empty() ? "." : dir.c_str());
  if (stream == nullptr) return;
  while (const dirent* entry = ::readdir(stream)) {
    const long pid = temp_owner(entry->d_name);
    // kill(pid, 0) fails with ESRCH only when no such process exists (EPERM: alive, not ours).
    if (pid <= 0 || pid == ::getpid() || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    ::unlinkat(::dirfd(stream), entry->d_name, 0);
  }
  ::closedir(stream);
}

void check_writable_directory(const std::string& dir, std::string_view parameter) {
  if (dir.empty()) throw UsageError(fmt::format("{}: empty path; allowed: a directory name", parameter));
  std::error_code ec;
  std::filesystem::path existing(dir);
  while (!std::filesystem::exists(existing, ec)) {
    existing = existing.has_relative_path() && existing.has_parent_path() ? existing.parent_path()
                                                                          : std::filesystem::path(".");
  }
  if (!std::filesystem::is_directory(existing, ec)) {
    if (existing == std::filesystem::path(dir)) throw UsageError(fmt::format("{}: '{}' is not a directory", parameter, dir));
    throw UsageError(fmt::format("{}: cannot create directory '{}': '{}' is not a directory", parameter, dir,
                                 existing.string()));
  }
  if (::access(existing.c_str(), W_OK | X_OK) != 0) {
    throw UsageError(fmt::format("{}: directory '{}' is not writable: {}", parameter, existing.string(), std::strerror(errno)));
  }
}

void ensure_writable_directory(const std::string& dir, std::string_view parameter) {
  std::error_code ec;
  std::filesystem::path p = dir.empty() ? std::filesystem::path(".") : std::filesystem::path(dir);
  if (!std::filesystem::exists(p, ec)) {
    std::filesystem::create_directories(p, ec);
    if (ec) throw UsageError(fmt::format("{}: cannot create directory '{}': {}", parameter, dir, ec.message()));
  }
  if (!std::filesystem::is_directory(p, ec)) {
    throw UsageError(fmt::format("{}: '{}' is not a directory", parameter, dir));
  }
  if (::access(p.c_str(), W_OK | X_OK) != 0) {
    throw UsageError(fmt::format("{}: directory '{}' is not writable: {}", parameter, dir, std::strerror(errno)));
  }
}

AtomicFile::AtomicFile(std::string path, std::string_view parameter) : path_(std::move(path)) {
  std::filesystem::path dest(path_);
  std::string dir = dest.has_parent_path() ? dest.parent_path().string() : std::string(".");
  ensure_writable_directory(dir, parameter);
  {  // once per directory and process: a sweep writing thousands of files scans each directory once
    static std::mutex scanned_mutex;
    static std::set<std::string> scanned;
    std::lock_guard lock(scanned_mutex);
    if (scanned.insert(dir).second) remove_stale_temporaries(dir);
  }
  // The slot is claimed before the file exists, so a signal arriving at any moment (on any
  // thread) finds every temporary that may be on disk; unlinking a name not yet created is harmless.
  static std::atomic<unsigned> counter{0};
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    temp_path_ = (std::filesystem::path(dir) /
                  temp_name(dest.filename().string(), static_cast<long>(::getpid()), counter.fetch_add(1)))
                     .string();
    slot_ = claim_slot(temp_path_);
    fd = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
      const int saved = errno;
      release_slot(slot_);
      slot_ = -1;
      if (saved != EEXIST)
        throw UsageError(fmt::format("{}: cannot create a file in '{}': {}", parameter, dir, std::strerror(saved)));
    }
  }
  if (fd < 0) throw UsageError(fmt::format("{}: cannot create a file in '{}': names taken", parameter, dir));
  file_ = ::fdopen(fd, "wb");
  if (file_ == nullptr) {
    ::close(fd);
    ::unlink(temp_path_.c_str());
    release_slot(slot_);
    throw Error(fmt::format("cannot open '{}': {}", temp_path_, std::strerror(errno)));
  }
}

AtomicFile::~AtomicFile() {
  if (committed_) return;
  if (file_) std::fclose(file_);
  ::unlink(temp_path_.c_str());
  release_slot(slot_);
}

void AtomicFile::write(std::string_view bytes) {
  if (bytes.empty()) return;
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) {
    throw Error(fmt::format("writing '{}': {}", path_, std::strerror(errno)));
  }
}

void AtomicFile::sync() {
  if (file_ == nullptr) return;
  if (std::fflush(file_) != 0 || ::fsync(::fileno(file_)) != 0) {
    throw Error(fmt::format("writing '{}': {}", path_, std::strerror(errno)));
  }
  const int closed = std::fclose(file_);
  file_ = nullptr;
  if (closed != 0) throw Error(fmt::format("writing '{}': {}", path_, std::strerror(errno)));
}

void AtomicFile::commit() {
  sync();
  ::chmod(temp_path_.c_str(), 0644);
  if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    int saved = errno;
    ::unlink(temp_path_.c_str());
    release_slot(slot_);
    throw Error(fmt::format("renaming onto '{}': {}", path_, std::strerror(saved)));
  }
  release_slot(slot_);
  committed_ = true;
}

void write_file_atomically(const std::string& path, std::string_view content, std::string_view parameter) {
  AtomicFile file(path, parameter);
  file.write(content);
  file.commit();
}

SignalDeferral::SignalDeferral() { g_deferral_depth.fetch_add(1); }

SignalDeferral::~SignalDeferral() {
  if (g_deferral_depth.fetch_sub(1) == 1) {
    const int pending = g_deferred_signal.exchange(0);
    if (pending != 0) cleanup_and_exit(pending);
  }
}

void install_signal_cleanup() {
  struct sigaction action {};
  action.sa_handler = cleanup_and_exit;
  // A signal deferred by a SignalDeferral returns from the handler: restart the interrupted call
  // (a write of the pair being committed) instead of failing it with EINTR.
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGHUP, &action, nullptr);
}

}  // namespace attnprof
