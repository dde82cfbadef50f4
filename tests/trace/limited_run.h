#pragma once
// Runs the attnprof binary (ATTNPROF_BIN) as a child under an address-space limit (RLIMIT_AS),
// optionally feeding its standard input through a pipe, and reports its exit code, output, the
// files it left in its working directory, its peak resident memory and its CPU time (wait4's rusage).
#include <cstddef>
#include <string>
#include <vector>

namespace attnprof::testing {

struct LimitedRun {
  int exit_code = -1;     // -1 when killed (by a signal or the timeout)
  bool timed_out = false;
  std::string out, err;
  std::vector<std::string> files;  // regular files left in the working directory
  long peak_rss_kib = 0;
  double cpu_seconds = 0;  // user + system time of the child (wait4's ru_utime + ru_stime)
};

struct LimitedRunOptions {
  std::size_t address_space_bytes = std::size_t{1} << 30;  // RLIMIT_AS of the child
  int timeout_seconds = 120;
  bool feed_stdin = false;  // stdin is a pipe carrying `stdin_bytes` (else /dev/null)
  std::string stdin_bytes;
};

// Writes `bytes` to `fd` (stopping early when the reader has gone: EPIPE), then closes it.
void write_all_and_close(int fd, const std::string& bytes);

LimitedRun run_limited(const std::vector<std::string>& args, const LimitedRunOptions& options = {});

// A gzip file of prefix + chunk repeated `repeats` times + suffix, built without holding the
// decompressed text: the chunk is deflated once after a full flush and its block repeated, and
// the trailer's CRC is combined (crc32_combine). A 1 GiB name fits in about 1 MB.
std::string gzip_repeated(const std::string& prefix, const std::string& chunk, std::size_t repeats,
                          const std::string& suffix);

}  // namespace attnprof::testing
