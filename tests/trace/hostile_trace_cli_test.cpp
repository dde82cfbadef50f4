// Hostile traces through the real binary (ATTNPROF_BIN), each run under a 1 GiB address-space
// limit: a huge string, number, nesting, text or event count is refused with one line naming the
// flag that raises the limit (exit 2, nothing on stdout, no file), in bounded time and memory;
// negative and overflowing durations are refused naming the file and the event; inspect reads a
// pipe, a FIFO and "-" in one pass, giving what it gives for the file.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include "trace/limited_run.h"
#include "trace_test_util.h"

namespace attnprof::testing {
namespace {

namespace fs = std::filesystem;

// The peak resident memory a refusal may take: the binary's own start-up plus the 16 MiB
// string limit and the reader's buffers, far below what the hostile files would need.
constexpr long kPeakRssKiB = 192 * 1024;

class HostileTraceCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(temp_dir()) / ("attnprof_hostile_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string file(const std::string& name, const std::string& bytes) {
    std::string p = (dir_ / name).string();
    write_bytes(p, bytes);
    return p;
  }
  // Exit 2, one line on stderr holding the file and every `expected` piece, nothing on stdout, no
  // file written, within the time and memory bounds.
  static void expect_refused(const LimitedRun& r, const std::string& path, const std::vector<std::string>& expected) {
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.rfind("attnprof: " + path + ": ", 0), 0u) << r.err;
    for (const std::string& piece : expected) EXPECT_NE(r.err.find(piece), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_TRUE(r.files.empty());
    EXPECT_GT(r.peak_rss_kib, 0);
    EXPECT_LT(r.peak_rss_kib, kPeakRssKiB);
  }
  fs::path dir_;
};

const std::string kMiB_a(std::size_t{1} << 20, 'a');
const std::string kMiB_1(std::size_t{1} << 20, '1');

TEST_F(HostileTraceCli, OneGiBNameInAOneMegabyteGzipIsRefusedAtTheStringLimit) {
  std::string gz = gzip_repeated(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": ")", kMiB_a, 1024,
                                 R"(", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]})");
  EXPECT_LT(gz.size(), std::size_t{2} << 20);
  std::string p = file("name.json.gz", gz);
  expect_refused(run_limited({"inspect", p}), p, {"a string is longer than 16777216 bytes", "--max-string-bytes raises it"});
}

TEST_F(HostileTraceCli, EightGiBArgStringIsRefusedAtTheStringLimit) {
  std::string gz = gzip_repeated(R"({"traceEvents": [{"ph": "X", "name": "k", "ts": 1, "dur": 1, "args": {"x": ")",
                                 kMiB_a, 8192, R"("}}]})");
  EXPECT_LT(gz.size(), std::size_t{10} << 20);
  std::string p = file("arg.json.gz", gz);
  expect_refused(run_limited({"inspect", p}), p, {"a string is longer than 16777216 bytes", "--max-string-bytes"});
}

TEST_F(HostileTraceCli, SkippedStringAndKeptArrayAreBoundedToo) {
  // A key the model skips (its string is not kept) and an arg whose value is a long array.
  std::string skipped = file("skip.json.gz", gzip_repeated(R"({"traceEvents": [{"ph": "X", "stack": ")", kMiB_a, 1024,
                                                          R"("}]})"));
  expect_refused(run_limited({"inspect", skipped}), skipped, {"a string is longer than", "--max-string-bytes"});
  std::string chunk;
  for (int i = 0; i < (1 << 19); ++i) chunk += "0,";
  std::string array = file("array.json.gz", gzip_repeated(R"({"traceEvents": [{"ph": "X", "args": {"x": [)", chunk, 1024, "0]}}]})"));
  expect_refused(run_limited({"inspect", array}), array,
                 {"a value kept as JSON text is longer than 16777216 bytes", "--max-string-bytes"});
}

TEST_F(HostileTraceCli, ThreeGiBNumberIsRefusedWhileStreaming) {
  for (const char* key : {"ts", "dur", "unmodelled"}) {
    std::string p = file(std::string(key) + ".json.gz",
                         gzip_repeated(R"({"traceEvents": [{"ph": "X", "name": "a", ")" + std::string(key) + "\": ",
                                       kMiB_1, 3072, "}]}"));
    EXPECT_LT(fs::file_size(p), std::size_t{4} << 20);
    expect_refused(run_limited({"inspect", p}), p, {"a number is longer than 400 characters", "--max-number-chars raises it"});
  }
}

TEST_F(HostileTraceCli, DeepNestingIsRefusedAtTheDepthLimit) {
  std::string p = file("deep.json", R"({"traceEvents": [{"ph": "X", "args": {"x": )" + std::string(100000, '['));
  expect_refused(run_limited({"inspect", p}), p, {"JSON nested deeper than 1000 levels", "--max-depth raises it"});
  // Raised, the same nesting is read as far as it goes (here: to the end of the truncated file).
  LimitedRun raised = run_limited({"inspect", "--max-depth", "200000", p});
  EXPECT_EQ(raised.exit_code, 2);
  EXPECT_NE(raised.err.find("truncated"), std::string::npos) << raised.err;
}

TEST_F(HostileTraceCli, DecompressedSizeIsRefusedAtTheTraceBytesLimit) {
  // 1 GiB of whitespace inside the events array: constant memory, refused after 100 MB of text
  // (about 0.3 s in a release build; the ASan suite leaves out the runs under RLIMIT_AS). Its time
  // is counted in CPU seconds, which a busy machine does not stretch as it does the wall clock; a
  // reader that hangs is stopped by run_limited's timeout, which expect_refused checks.
  std::string p = file("bomb.json.gz", gzip_repeated(R"({"traceEvents": [)", std::string(std::size_t{1} << 20, ' '),
                                                     1024, "]}"));
  const LimitedRun r = run_limited({"inspect", "--max-trace-bytes", "100000000", p});
  expect_refused(r, p, {"the JSON text is longer than 100000000 bytes", "--max-trace-bytes raises it"});
  EXPECT_LT(r.cpu_seconds, 30.0);
}

TEST_F(HostileTraceCli, EventCountIsRefusedAtTheEventsLimit) {
  auto events = [](int n) {
    std::string text = R"({"traceEvents": [)";
    for (int i = 0; i < n; ++i)
      text += std::string(i ? ", " : "") + R"({"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": )" +
              std::to_string(10 * i) + R"(, "dur": 5})";
    return text + "]}";
  };
  std::string over = file("over.json", events(2001));
  expect_refused(run_limited({"inspect", "--max-events", "2000", over}), over,
                 {"more than 2000 entries in \"traceEvents\"", "--max-events raises it"});
  LimitedRun at = run_limited({"inspect", "--max-events", "2000", file("at.json", events(2000))});
  EXPECT_EQ(at.exit_code, 0) << at.err;
  EXPECT_NE(at.out.find("op"), std::string::npos);
}

TEST_F(HostileTraceCli, RaisingAFlagAcceptsTheFile) {
  // A 20 MiB name: refused by default, read with --max-string-bytes 32 MiB.
  std::string p = file("long.json.gz", gzip_repeated(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": ")",
                                                     kMiB_a, 20, R"(", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]})"));
  expect_refused(run_limited({"inspect", p}), p, {"--max-string-bytes"});
  LimitedRun raised = run_limited({"inspect", "--max-string-bytes", "33554432", "--row-limit", "1", p});
  EXPECT_EQ(raised.exit_code, 0) << raised.err;
  EXPECT_NE(raised.out.find("aaaa"), std::string::npos);
  // A 500-digit number kept as a raw arg: refused by default, read with --max-number-chars 500.
  std::string n = file("num.json", R"({"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1, "args": {"x": 1)" +
                                       std::string(499, '0') + "}}]}");
  expect_refused(run_limited({"inspect", n}), n, {"a number is longer than 400 characters"});
  EXPECT_EQ(run_limited({"inspect", "--max-number-chars", "500", n}).exit_code, 0);
}

TEST_F(HostileTraceCli, ReportRefusesATraceOverALimitAndWritesNoReport) {
  // A compare row without a timeline sends report to its trace: the 1 GiB name is refused there.
  fs::path results = dir_ / "results";
  fs::create_directories(results);
  write_bytes((results / "compare.json").string(), R"({"rows": [{"variant": "naive", "trace_path": "t.json.gz"}]})");
  std::string trace = (results / "t.json.gz").string();
  write_bytes(trace, gzip_repeated(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": ")", kMiB_a, 1024,
                                   R"(", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]})"));
  LimitedRun r = run_limited({"report", results.string()});
  expect_refused(r, trace, {"a string is longer than 16777216 bytes", "--max-string-bytes raises it"});
  EXPECT_FALSE(fs::exists(results / "report.html"));
}

TEST_F(HostileTraceCli, LimitFlagsRefuseZeroAndNonNumbers) {
  std::string p = file("ok.json", R"({"traceEvents": []})");
  for (const char* flag : {"--max-string-bytes", "--max-number-chars", "--max-depth", "--max-trace-bytes", "--max-events"}) {
    for (const char* value : {"0", "-1", "many", "1e3", "18446744073709551616"}) {
      LimitedRun r = run_limited({"inspect", flag, value, p});
      EXPECT_EQ(r.exit_code, 2) << flag << " " << value;
      EXPECT_NE(r.err.find(flag), std::string::npos) << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
      EXPECT_EQ(r.out, "");
    }
  }
}

TEST_F(HostileTraceCli, NegativeDurationIsRefusedNamingTheEvent) {
  std::string p = file("neg.json", R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 100},
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 200, "dur": -50}]})");
  LimitedRun r = run_limited({"inspect", p});
  expect_refused(r, p, {"event #2 ('aten::add', ph X) has a negative \"dur\" (-50.000 us); dur must be >= 0"});
  EXPECT_EQ(r.err.find("%"), std::string::npos);
}

TEST_F(HostileTraceCli, OverflowingDurationsAreRefusedNeverWrapped) {
  auto trace = [](const std::string& events) { return R"({"traceEvents": [)" + events + "]}"; };
  auto x = [](const std::string& name, const std::string& ts, const std::string& dur) {
    return R"({"ph": "X", "cat": "kernel", "name": ")" + name + R"(", "pid": 0, "tid": 7, "ts": )" + ts +
           R"(, "dur": )" + dur + "}";
  };
  // Each fits in int64 ns (5e18); together 1e19 ns do not.
  std::string sum = file("sum.json", trace(x("k1", "0", "5000000000000000") + ", " + x("k2", "1", "5000000000000000")));
  expect_refused(run_limited({"inspect", sum}), sum, {"event #2 ('k2', ph X) the durations add up past the int64 ns range"});
  // ts 9e18 ns + dur 1e18 ns.
  std::string end = file("end.json", trace(x("k", "9000000000000000", "1000000000000000")));
  expect_refused(run_limited({"inspect", end}), end, {"event #1 ('k', ph X) ends past the int64 ns range"});
  // -9e18 ns and +9e18 ns: 1.8e19 ns apart.
  std::string span = file("span.json", trace(x("a", "-9000000000000000", "0") + ", " + x("b", "9000000000000000", "0")));
  expect_refused(run_limited({"inspect", span}), span, {"event #2 lies more than INT64_MAX ns"});
}

TEST_F(HostileTraceCli, ControlCharactersInANameStayOutOfTheErrorLine) {
  std::string p = file("esc.json", R"({"traceEvents": [{"ph": "X", "name": "a\u001b[2J\nb", "ts": 1, "dur": -1}]})");
  LimitedRun r = run_limited({"inspect", p});
  expect_refused(r, p, {R"(('a\x1b[2J\nb', ph X))"});
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos);
}

// Item 3: one pass over the input.
class InspectOnePass : public HostileTraceCli {
 protected:
  void expect_same_as_file(const LimitedRun& r, const LimitedRun& reference) {
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, reference.err);
    EXPECT_EQ(r.out, reference.out);
  }
};

TEST_F(InspectOnePass, DashAndDevStdinReadAPipe) {
  for (const std::string& variant : {"naive", "flash"}) {
    std::string gz_path = anchor_trace(variant);
    std::string plain = gunzip_file(gz_path);
    std::string json_path = file(variant + ".json", plain);
    LimitedRun reference = run_limited({"inspect", json_path});
    ASSERT_EQ(reference.exit_code, 0) << reference.err;
    ASSERT_NE(reference.out.find("Self CPU time total"), std::string::npos);
    for (const std::string& bytes : {plain, read_bytes(gz_path)}) {  // gzip found from the first bytes
      for (const char* arg : {"-", "/dev/stdin"}) {
        LimitedRunOptions o;
        o.feed_stdin = true;
        o.stdin_bytes = bytes;
        expect_same_as_file(run_limited({"inspect", arg}, o), reference);
      }
    }
  }
}

TEST_F(InspectOnePass, FifoIsReadOnceWithoutHanging) {
  std::string plain = gunzip_file(anchor_trace("math"));
  std::string reference_path = file("math.json", plain);
  LimitedRun reference = run_limited({"inspect", reference_path});
  ASSERT_EQ(reference.exit_code, 0) << reference.err;
  std::string fifo = (dir_ / "trace.fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] {
    // Waits (up to 60 s) for the reader to open the FIFO, then writes the trace once.
    int fd = -1;
    for (int i = 0; i < 6000 && fd < 0; ++i) {
      fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
      if (fd < 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (fd < 0) return;
    ::fcntl(fd, F_SETFL, 0);
    write_all_and_close(fd, plain);
  });
  LimitedRunOptions o;
  o.timeout_seconds = 60;
  LimitedRun r = run_limited({"inspect", fifo}, o);
  writer.join();
  expect_same_as_file(r, reference);
}

TEST_F(InspectOnePass, ErrorsOnStandardInputNameIt) {
  LimitedRunOptions o;
  o.feed_stdin = true;
  o.stdin_bytes = R"({"traceEvents": [)";
  LimitedRun r = run_limited({"inspect", "-"}, o);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("attnprof: standard input: truncated", 0), 0u) << r.err;
  o.stdin_bytes = "";
  r = run_limited({"inspect", "-"}, o);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("attnprof: standard input: empty file", 0), 0u) << r.err;
}

}  // namespace
}  // namespace attnprof::testing
