// Truncated, empty, non-JSON, wrong-schema and gzip-corrupt traces: one UsageError line naming
// the file and the problem, never a crash; the CLI exits 2 with that line.
#include <attnprof/error.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>

#include "trace/reader.h"
#include "trace_test_util.h"

namespace attnprof::trace {
namespace {

namespace fs = std::filesystem;

class BadFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::temp_dir()) / ("attnprof_bad_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string file(const std::string& name, const std::string& bytes) {
    std::string p = (dir_ / name).string();
    testing::write_bytes(p, bytes);
    return p;
  }
  // The error's one line, checked for the file name and `expected`.
  void expect_usage_error(const std::string& path, const std::string& expected) {
    try {
      read_trace_file(path);
      ADD_FAILURE() << path << ": no error";
    } catch (const UsageError& e) {
      std::string what = e.what();
      EXPECT_NE(what.find(path), std::string::npos) << what;
      EXPECT_NE(what.find(expected), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
  std::string gzip(const std::string& text) {
    std::string out(compressBound(text.size()) + 64, '\0');
    z_stream z{};
    deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
    z.avail_in = static_cast<uInt>(text.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    deflate(&z, Z_FINISH);
    out.resize(z.total_out);
    deflateEnd(&z);
    return out;
  }
  fs::path dir_;
};

TEST_F(BadFiles, MissingAndEmpty) {
  expect_usage_error((dir_ / "missing.json").string(), "cannot open");
  expect_usage_error(file("empty.json", ""), "empty file");
  expect_usage_error(file("blank.json", "  \n "), "no JSON");
  expect_usage_error(dir_.string(), "read error");
}

TEST_F(BadFiles, NotJson) {
  expect_usage_error(file("text.json", "hello world"), "not JSON");
  expect_usage_error(file("table.txt", "----  Name  Self CPU %"), "not JSON");
  expect_usage_error(file("garbage.json", R"({"traceEvents": [}]})"), "event #1 is not an object");
  expect_usage_error(file("trailing.json", R"({"traceEvents": []} x)"), "after the end");
  expect_usage_error(file("badesc.json", R"({"traceEvents": [{"ph": "X", "name": "a\q"}]})"), "bad escape");
  expect_usage_error(file("deep.json", "{\"traceEvents\": [], \"x\": " + std::string(5000, '[')), "deeper than 1000");
}

TEST_F(BadFiles, WrongSchema) {
  expect_usage_error(file("noevents.json", R"({"schemaVersion": 1})"), "no \"traceEvents\"");
  expect_usage_error(file("scalar.json", R"({"traceEvents": 5})"), "not an array");
  expect_usage_error(file("number.json", "42"), "not JSON");
  expect_usage_error(file("eventnum.json", R"({"traceEvents": [1]})"), "event #1 is not an object");
  expect_usage_error(file("noph.json", R"({"traceEvents": [{"name": "a"}]})"), "has no \"ph\"");
  expect_usage_error(file("nots.json", R"({"traceEvents": [{"ph": "X", "name": "a", "dur": 1}]})"), "no numeric \"ts\"");
  expect_usage_error(file("nodur.json", R"({"traceEvents": [{"ph": "X", "name": "a", "ts": 1}]})"), "no numeric \"dur\"");
  expect_usage_error(file("badpid.json", R"({"traceEvents": [{"ph": "X", "pid": [1], "ts": 1, "dur": 1}]})"),
                     "neither a number nor a string");
  expect_usage_error(file("schema.json", R"({"schemaVersion": "one", "traceEvents": []})"), "not an integer");
}

TEST_F(BadFiles, TruncatedAnywhere) {
  std::string text = testing::gunzip_file(testing::anchor_trace("flash"));
  // Every cut inside the document, at a spread of places, is reported (never accepted, never a crash).
  for (std::size_t cut : {std::size_t{1}, std::size_t{10}, text.size() / 7, text.size() / 3, text.size() / 2,
                          text.size() - 40, text.size() - 3}) {
    std::string p = file("cut.json", text.substr(0, cut));
    try {
      read_trace_file(p);
      ADD_FAILURE() << "cut at " << cut << " accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos);
    }
  }
  expect_usage_error(file("cut2.json", text.substr(0, text.size() / 2)), "truncated");
}

TEST_F(BadFiles, GzipCorruptOrTruncated) {
  std::string gz = testing::read_bytes(testing::anchor_trace("naive"));
  expect_usage_error(file("half.json.gz", gz.substr(0, gz.size() / 2)), "truncated gzip");
  std::string flipped = gz;
  for (std::size_t i = 40; i < 60; ++i) flipped[i] = static_cast<char>(flipped[i] ^ 0x5a);
  expect_usage_error(file("flipped.json.gz", flipped), "corrupt gzip");
  expect_usage_error(file("magic.json.gz", std::string("\x1f\x8b", 2)), "gzip");
  // Valid gzip around something that is not a trace.
  expect_usage_error(file("notjson.json.gz", gzip("not json at all")), "not JSON");
  // Concatenated gzip members are one stream.
  std::string whole = R"({"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]})";
  Trace t = read_trace_file(file("two.json.gz", gzip(whole.substr(0, 20)) + gzip(whole.substr(20))));
  EXPECT_EQ(t.events.size(), 1u);
}

TEST_F(BadFiles, CliPrintsOneLineAndExitsTwo) {
  const char* bin = std::getenv("ATTNPROF_BIN");
  if (bin == nullptr || !fs::exists(bin)) GTEST_SKIP() << "ATTNPROF_BIN not set";
  std::string bad = file("bad.json", "{\"traceEvents\": [");
  std::string cmd = std::string(bin) + " inspect " + bad + " 2>&1";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe)) out += buf;
  int status = ::pclose(pipe);
  EXPECT_EQ(WEXITSTATUS(status), 2) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_NE(out.find(bad + ": truncated"), std::string::npos) << out;
}

}  // namespace
}  // namespace attnprof::trace
