#include "trace/limited_run.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "cli/cli_runner.h"

namespace attnprof::testing {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string deflate_piece(z_stream& z, const std::string& text, int flush) {
  std::string out;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  char buf[65536];
  do {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    int rc = deflate(&z, flush);
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) throw std::runtime_error("deflate failed");
    out.append(buf, sizeof buf - z.avail_out);
  } while (z.avail_out == 0);
  return out;
}

void put_le32(std::string& out, std::uint32_t v) {
  for (int k = 0; k < 4; ++k) out.push_back(static_cast<char>((v >> (8 * k)) & 0xff));
}

}  // namespace

std::string gzip_repeated(const std::string& prefix, const std::string& chunk, std::size_t repeats,
                          const std::string& suffix) {
  z_stream z{};
  if (deflateInit2(&z, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY) != Z_OK) throw std::runtime_error("deflateInit2");
  std::string out("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10);  // gzip header, no name, OS unix
  out += deflate_piece(z, prefix, Z_FULL_FLUSH);
  std::string block = deflate_piece(z, chunk, Z_FULL_FLUSH);  // refers to nothing before it
  for (std::size_t i = 0; i < repeats; ++i) out += block;
  out += deflate_piece(z, suffix, Z_FINISH);
  deflateEnd(&z);
  auto crc_of = [](const std::string& s) {
    return crc32(0L, reinterpret_cast<const Bytef*>(s.data()), static_cast<uInt>(s.size()));
  };
  uLong crc = crc_of(prefix);
  uLong chunk_crc = crc_of(chunk);
  for (std::size_t i = 0; i < repeats; ++i) crc = crc32_combine(crc, chunk_crc, static_cast<z_off_t>(chunk.size()));
  crc = crc32_combine(crc, crc_of(suffix), static_cast<z_off_t>(suffix.size()));
  std::uint64_t total = prefix.size() + chunk.size() * repeats + suffix.size();
  put_le32(out, static_cast<std::uint32_t>(crc));
  put_le32(out, static_cast<std::uint32_t>(total & 0xffffffffu));
  return out;
}

void write_all_and_close(int fd, const std::string& bytes) {
  ::signal(SIGPIPE, SIG_IGN);  // the child may stop reading early (it refused the input)
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
}

LimitedRun run_limited(const std::vector<std::string>& args, const LimitedRunOptions& options) {
  LimitedRun result;
  std::string work = make_temp_dir();
  std::string capture = make_temp_dir();
  std::string out_path = capture + "/out", err_path = capture + "/err";
  std::vector<std::string> argv_strings{attnprof_binary()};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  int in_pipe[2] = {-1, -1};
  if (options.feed_stdin && ::pipe(in_pipe) != 0) throw std::runtime_error("pipe failed");
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    rlimit as{options.address_space_bytes, options.address_space_bytes};
    int in = options.feed_stdin ? in_pipe[0] : ::open("/dev/null", O_RDONLY);
    int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0 || err < 0 || ::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0 ||
        ::chdir(work.c_str()) != 0 || ::setrlimit(RLIMIT_AS, &as) != 0)
      ::_exit(126);
    if (options.feed_stdin) ::close(in_pipe[1]);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  std::thread feeder;
  if (options.feed_stdin) {
    ::close(in_pipe[0]);
    feeder = std::thread([fd = in_pipe[1], &bytes = options.stdin_bytes] { write_all_and_close(fd, bytes); });
  }
  int status = 0;
  rusage usage{};
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(options.timeout_seconds);
  for (;;) {
    pid_t got = ::wait4(pid, &status, WNOHANG, &usage);
    if (got == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      result.timed_out = true;
      ::kill(pid, SIGKILL);
      ::wait4(pid, &status, 0, &usage);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (feeder.joinable()) feeder.join();
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.peak_rss_kib = usage.ru_maxrss;
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  result.cpu_seconds = seconds(usage.ru_utime) + seconds(usage.ru_stime);
  result.out = slurp(out_path);
  result.err = slurp(err_path);
  std::filesystem::remove_all(capture);
  for (auto& entry : std::filesystem::recursive_directory_iterator(work))
    if (!entry.is_directory()) result.files.push_back(entry.path().filename().string());
  std::filesystem::remove_all(work);
  return result;
}

}  // namespace attnprof::testing
