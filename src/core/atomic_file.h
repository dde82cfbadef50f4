#pragma once
// Every output file (traces, tables, reports, CSV/JSON) is written to a temporary file beside
// its destination and renamed into place on commit(), so a crash, an error or SIGINT/SIGTERM
// never leaves a partial file. Uncommitted temporaries are removed by the destructor and by the
// signal handler (install_signal_cleanup, called once by the CLI).
#include <cstdio>
#include <string>
#include <string_view>

namespace attnprof {

class AtomicFile {
 public:
  // Throws UsageError naming `flag` when the directory is missing or not writable.
  AtomicFile(std::string path, std::string_view flag = "--out");
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::string_view bytes);
  std::FILE* handle() { return file_; }  // for writers that stream (zlib, fmt::print)
  const std::string& temp_path() const { return temp_path_; }
  void commit();  // flush, fsync, rename onto the destination

 private:
  std::string path_;
  std::string temp_path_;
  std::FILE* file_ = nullptr;
  int slot_ = -1;
  bool committed_ = false;
};

void write_file_atomically(const std::string& path, std::string_view content, std::string_view flag = "--out");

// SIGINT/SIGTERM remove every uncommitted temporary file, then the process exits 130/143.
void install_signal_cleanup();

// Files that must agree with each other (a sweep's CSV and JSON) are committed inside one
// SignalDeferral: a SIGINT/SIGTERM arriving meanwhile, on any thread, takes effect when the
// outermost scope ends, so the pair is never left half-updated.
class SignalDeferral {
 public:
  SignalDeferral();
  ~SignalDeferral();
  SignalDeferral(const SignalDeferral&) = delete;
  SignalDeferral& operator=(const SignalDeferral&) = delete;
};

// Throws UsageError naming `flag` unless `dir` exists (creating it if needed) and is writable.
void ensure_writable_directory(const std::string& dir, std::string_view flag);

}  // namespace attnprof
