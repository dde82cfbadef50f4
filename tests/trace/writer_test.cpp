#include <attnprof/error.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <optional>

#include "common/child_process.h"
#include "core/atomic_file.h"

#include "sample_trace.h"
#include "trace/writer.h"
#include "trace_test_util.h"

namespace attnprof::trace {
namespace {

using nlohmann::json;

TEST(Writer, WritesKinetoTopLevelKeysAndDistributedInfoForHta) {
  json doc = json::parse(to_json(testing::sample_trace()));
  for (const char* key : {"schemaVersion", "deviceProperties", "baseTimeNanoseconds", "displayTimeUnit", "traceName",
                          "traceEvents", "distributedInfo"})
    EXPECT_TRUE(doc.contains(key)) << key;
  EXPECT_EQ(doc["distributedInfo"], json::parse(R"({"rank": 0, "world_size": 1})"));
  EXPECT_EQ(doc["schemaVersion"], 1);
  EXPECT_EQ(doc["baseTimeNanoseconds"], 1790857026000000000LL);
  EXPECT_EQ(doc["deviceProperties"][0]["numSms"], 132);
  EXPECT_EQ(doc["cuda_driver_version"], 13000);
  EXPECT_EQ(doc["traceName"], "sample \"trace\"");
}

TEST(Writer, OneObjectPerPhaseWithKinetoFieldsAndNanosecondDigits) {
  trace::Trace t = testing::sample_trace();
  std::string text = to_json(t);
  json doc = json::parse(text);
  std::map<std::string, int> phases;
  for (const auto& e : doc["traceEvents"]) ++phases[e["ph"].get<std::string>()];
  EXPECT_EQ(phases["X"], 6);
  EXPECT_EQ(phases["i"], 2);
  EXPECT_EQ(phases["s"], 2);
  EXPECT_EQ(phases["f"], 1);
  EXPECT_EQ(phases["M"], 2);
  // ts/dur carry the ns digits: 1500 ns -> 1.500 µs, 2001 ns -> 2.001 µs.
  EXPECT_NE(text.find("\"ts\": 1.500, \"dur\": 2.001"), std::string::npos);
  const json* kernel = nullptr;
  for (const auto& e : doc["traceEvents"])
    if (e.value("cat", "") == "kernel") kernel = &e;
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ((*kernel)["args"]["grid"], json::parse("[8, 16, 8]"));
  EXPECT_EQ((*kernel)["args"]["registers per thread"], 255);
  EXPECT_EQ((*kernel)["args"]["correlation"], 90);
  EXPECT_EQ((*kernel)["pid"], 0);
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "f") EXPECT_EQ(e["bp"], "e");
    if (e["ph"] == "M" && e["pid"].is_string()) EXPECT_EQ(e["pid"], "Spans");
    if (e.value("name", "") == "[memory]") {
      EXPECT_EQ(e["args"]["Bytes"], -4096);
      EXPECT_EQ(e["args"]["Total Allocated"], 1024);
      EXPECT_EQ(e["s"], "t");
    }
  }
}

TEST(Writer, GzipByExtensionAtomicallyAndNoTemporaryLeftBehind) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(testing::temp_dir()) / ("attnprof_writer_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  trace::Trace t = testing::sample_trace();
  write_trace_file((dir / "a.json.gz").string(), t);
  write_trace_file((dir / "a.json").string(), t);
  std::string plain = testing::read_bytes((dir / "a.json").string());
  EXPECT_EQ(plain, to_json(t));
  std::string raw_gz = testing::read_bytes((dir / "a.json.gz").string());
  ASSERT_GE(raw_gz.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(raw_gz[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(raw_gz[1]), 0x8b);
  EXPECT_EQ(testing::gunzip_file((dir / "a.json.gz").string()), plain);
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    ++files;
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path();
  }
  EXPECT_EQ(files, 2);
  fs::remove_all(dir);
}

// Issue 8 item 6: SIGTERM while traces are being written leaves no temporary and no partial
// file: every file that exists afterwards is complete.
TEST(Writer, SigtermDuringWritesLeavesOnlyCompleteFiles) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(testing::temp_dir()) / ("attnprof_sig_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  Trace big = testing::sample_trace();
  for (int i = 0; i < 12; ++i) big.events.insert(big.events.end(), big.events.begin(), big.events.end());  // 32 k events
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    install_signal_cleanup();
    for (int i = 0;; ++i) write_trace_file((dir / ("t" + std::to_string(i) + ".json.gz")).string(), big);
  }
  testing::ChildGuard child(pid);  // the writer loops for ever: killed if an assertion below returns
  bool started = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!started && std::chrono::steady_clock::now() < deadline) {
    for (const auto& entry : fs::directory_iterator(dir)) started = started || entry.path().filename().string().find(".tmp") != std::string::npos;
    if (!started) ::usleep(1000);
  }
  ASSERT_TRUE(started) << "the writer created no temporary within 60 s";
  ::kill(pid, SIGTERM);
  const std::optional<int> status = child.wait_for(std::chrono::seconds(60));
  ASSERT_TRUE(status) << "the writer was still running 60 s after SIGTERM";
  EXPECT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 128 + SIGTERM);
  std::string expected = to_json(big);
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    EXPECT_EQ(name.find(".tmp"), std::string::npos) << "temporary left behind: " << name;
    if (name.find(".tmp") == std::string::npos)
      EXPECT_EQ(testing::gunzip_file(entry.path().string()), expected) << "partial file: " << name;
  }
  fs::remove_all(dir);
}

TEST(Writer, UnwritablePathIsAUsageErrorNamingTheFlag) {
  try {
    write_trace_file("/proc/attnprof_no/x.json", testing::sample_trace(), "out_dir");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("out_dir"), std::string::npos) << e.what();
  }
}

TEST(Writer, EmptyTraceIsStillAValidDocument) {
  json doc = json::parse(to_json(trace::Trace{}));
  EXPECT_TRUE(doc["traceEvents"].empty());
  EXPECT_TRUE(doc["deviceProperties"].empty());
}

}  // namespace
}  // namespace attnprof::trace
