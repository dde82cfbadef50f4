#pragma once
// Every output file (traces, tables, reports, CSV/JSON) is written to a temporary file beside
// its destination and renamed into place on commit(), so a crash, an error or SIGINT/SIGTERM/SIGHUP
// never leaves a partial file. Uncommitted temporaries are removed by the destructor and by the
// signal handler (install_signal_cleanup, called once by the CLI); those a killed process left
// (".NAME.tmp.PID.N" whose PID is gone) are removed when a temporary is next made in their directory.
#include <cstdio>
#include <string>
#include <string_view>

namespace attnprof {

class AtomicFile {
 public:
  // Throws UsageError naming `parameter` when the directory is missing or not writable.
  AtomicFile(std::string path, std::string_view parameter = "out_dir");
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::string_view bytes);
  std::FILE* handle() { return file_; }  // for writers that stream (zlib, fmt::print)
  const std::string& temp_path() const { return temp_path_; }
  // Flush, fsync and close; throws on a write error (disk full, a file size limit). Files that
  // must agree are all synced before any is committed, so a write error renames none of them.
  void sync();
  void commit();  // sync (when not done yet), then rename onto the destination

 private:
  std::string path_;
  std::string temp_path_;
  std::FILE* file_ = nullptr;
  int slot_ = -1;
  bool committed_ = false;
};

void write_file_atomically(const std::string& path, std::string_view content, std::string_view parameter = "out_dir");

// SIGINT/SIGTERM/SIGHUP remove every uncommitted temporary file, then the process exits 128 + the
// signal's number (130, 143, 129).
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

// Throws UsageError naming `parameter` unless `dir` exists (creating it if needed) and is writable.
void ensure_writable_directory(const std::string& dir, std::string_view parameter);
// The same checks without creating anything: `dir` is a writable directory, or the nearest part
// of it that exists is one (so it can be made when the first file is written). Throws UsageError
// naming `parameter` for an empty path, a file in the way or a directory that is not writable.
void check_writable_directory(const std::string& dir, std::string_view parameter);

// Removes the temporaries in `dir` (".NAME.tmp.PID.N") whose process no longer exists. AtomicFile
// calls it the first time it makes a temporary in a directory.
void remove_stale_temporaries(const std::string& dir);

}  // namespace attnprof
