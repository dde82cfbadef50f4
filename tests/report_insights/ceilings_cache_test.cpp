// The ceilings cache: where it lives, what a valid file holds, which files are refused, and that
// a measurement is made once, reused, made again on request and when the file is corrupt.
#include "report/ceilings_cache.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cli/cli_runner.h"

namespace attnprof::report {
namespace {

namespace fs = std::filesystem;

using testing::read_whole_file;
using testing::ScopedEnv;

Ceilings known_ceilings() {
  Ceilings c;
  c.device = Device::cpu;
  c.model = "AMD EPYC 7B13 64-Core Processor";
  c.threads = 2;
  c.device_name = "AMD EPYC 7B13 64-Core Processor (2 threads)";
  c.matmul_tflops = 0.125;
  c.matmul_spread = {0.0625, 0.25, 7};
  c.matmul_what = "OpenBLAS sgemm 2048\u00b3 fp32, 2 threads";
  c.matmul_bf16_tflops = 0.5;
  c.matmul_bf16_spread = {0.5, 0.75, 5};
  c.matmul_bf16_what = "oneDNN bf16 matmul 2048\u00b3, fp32 accumulation, 2 threads";
  c.copy_gbps = 12.5;
  c.copy_spread = {10, 13, 9};
  c.copy_what = "memcpy of 128 MiB, read + write, 1 thread";
  c.seconds_spent = 1.5;
  c.measured_at = "2026-12-01T14:50:03Z";
  return c;
}

std::optional<Ceilings> parse(const std::string& text, std::string& problem) {
  return parse_ceilings_cache(text, Device::cpu, "AMD EPYC 7B13 64-Core Processor", 2, problem);
}


TEST(CeilingsCache, DirectoryFollowsXdgThenHome) {
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/var/cache/me");
    ScopedEnv home("HOME", "/home/me");
    EXPECT_EQ(ceilings_cache_dir(), "/var/cache/me/attnprof");
  }
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "relative/cache");  // not absolute: ignored, as the XDG spec says
    ScopedEnv home("HOME", "/home/me");
    EXPECT_EQ(ceilings_cache_dir(), "/home/me/.cache/attnprof");
  }
  {
    ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
    ScopedEnv home("HOME", nullptr);
    EXPECT_EQ(ceilings_cache_dir(), "");
  }
}

TEST(CeilingsCache, FileNamedByDeviceModelAndThreads) {
  EXPECT_EQ(ceilings_cache_path("/c/attnprof", Device::cpu, "AMD EPYC 7B13 64-Core Processor", 2),
            "/c/attnprof/ceilings-cpu-AMD_EPYC_7B13_64-Core_Processor-2t.json");
  EXPECT_EQ(ceilings_cache_path("/c/attnprof", Device::cuda, "NVIDIA H200", 0),
            "/c/attnprof/ceilings-cuda-NVIDIA_H200-0t.json");
}

TEST(CeilingsCache, ValidFileGivesBackEveryNumber) {
  std::string problem;
  const std::optional<Ceilings> back = parse(ceilings_cache_text(known_ceilings()), problem);
  ASSERT_TRUE(back) << problem;
  EXPECT_EQ(back->matmul_tflops, 0.125);
  EXPECT_EQ(back->matmul_spread.min, 0.0625);
  EXPECT_EQ(back->matmul_spread.max, 0.25);
  EXPECT_EQ(back->matmul_spread.samples, 7);
  EXPECT_EQ(back->matmul_bf16_tflops, 0.5);
  EXPECT_EQ(back->copy_gbps, 12.5);
  EXPECT_EQ(back->copy_spread.samples, 9);
  EXPECT_EQ(back->threads, 2);
  EXPECT_EQ(back->measured_at, "2026-12-01T14:50:03Z");
  EXPECT_EQ(back->device_name, "AMD EPYC 7B13 64-Core Processor (2 threads)");
}

TEST(CeilingsCache, RefusesCorruptAndForeignFiles) {
  const nlohmann::json good = nlohmann::json::parse(ceilings_cache_text(known_ceilings()));
  auto changed = [&](const std::function<void(nlohmann::json&)>& change) {
    nlohmann::json j = good;
    change(j);
    return j.dump();
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"kind\": \"attnprof.ceil", "not JSON"},
      {"[1, 2]", "not an attnprof ceilings file"},
      {changed([](auto& j) { j["kind"] = "attnprof.sweep"; }), "not an attnprof ceilings file"},
      {changed([](auto& j) { j["version"] = 2; }), "version 2"},
      {changed([](auto& j) { j.erase("ceilings"); }), "no ceilings object"},
      {changed([](auto& j) { j["ceilings"]["model"] = "Intel Xeon"; }), "measured for cpu 'Intel Xeon'"},
      {changed([](auto& j) { j["ceilings"]["threads"] = 4; }), "at 4 threads"},
      {changed([](auto& j) { j["ceilings"]["device"] = "cuda"; }), "measured for cuda"},
      {changed([](auto& j) { j["ceilings"]["measured_at"] = "yesterday"; }), "measured_at"},
      {changed([](auto& j) { j["ceilings"]["copy_what"] = std::string(600, 'x'); }), "copy_what"},
      {changed([](auto& j) { j["ceilings"]["matmul_tflops"] = "fast"; }), "matmul_tflops missing or not a number"},
      {changed([](auto& j) { j["ceilings"]["matmul_tflops"] = -1; }), "matmul_tflops -1 out of range"},
      {changed([](auto& j) { j["ceilings"]["copy_gbps"] = 0; }), "copy_gbps 0 out of range"},
      {changed([](auto& j) { j["ceilings"]["matmul_tflops"] = 1.0; }), "not within its spread"},
      {changed([](auto& j) { j["ceilings"]["copy_spread"]["samples"] = 0; }), "copy_spread.samples"},
      {changed([](auto& j) { j["ceilings"]["matmul_bf16_spread"].erase("min"); }), "matmul_bf16_spread.min"},
      {changed([](auto& j) { j["ceilings"].erase("seconds_spent"); }), "seconds_spent"},
  };
  for (const auto& [text, expected] : cases) {
    std::string problem;
    EXPECT_FALSE(parse(text, problem)) << expected;
    EXPECT_NE(problem.find(expected), std::string::npos) << "problem: " << problem << "; expected: " << expected;
  }
}

TEST(CeilingsCache, MeasuredOnceReusedRemeasuredAndReplacedWhenCorrupt) {
  const std::string cache_home = testing::make_temp_dir();
  ScopedEnv xdg("XDG_CACHE_HOME", cache_home.c_str());
  int measurements = 0;
  auto measure = [&] {
    ++measurements;
    Ceilings c = known_ceilings();
    c.matmul_tflops = c.matmul_spread.max = 0.25 * measurements;  // each measurement tells itself apart
    return c;
  };
  const std::string path =
      ceilings_cache_path(cache_home + "/attnprof", Device::cpu, "AMD EPYC 7B13 64-Core Processor", 2);
  const std::string model = "AMD EPYC 7B13 64-Core Processor";

  Ceilings first = cached_or_measured(Device::cpu, model, 2, false, measure);
  EXPECT_EQ(measurements, 1);
  EXPECT_EQ(first.cache_path, path);
  ASSERT_TRUE(fs::exists(path));
  const std::string written = read_whole_file(path);

  Ceilings second = cached_or_measured(Device::cpu, model, 2, false, measure);
  EXPECT_EQ(measurements, 1) << "a valid cache must be reused";
  EXPECT_EQ(second.matmul_tflops, 0.25);
  EXPECT_EQ(read_whole_file(path), written);

  // A file for another thread count, which --remeasure drops (measured again when next needed).
  const std::string four = ceilings_cache_path(cache_home + "/attnprof", Device::cpu, model, 4);
  std::ofstream(four) << "{}";
  Ceilings third = cached_or_measured(Device::cpu, model, 2, true, measure);
  EXPECT_EQ(measurements, 2);
  EXPECT_EQ(third.matmul_tflops, 0.5);
  std::string problem;
  EXPECT_EQ(parse(read_whole_file(path), problem)->matmul_tflops, 0.5) << problem;
  EXPECT_FALSE(fs::exists(four));

  std::ofstream(path) << "{\"kind\": \"attnprof.ceilings\", \"version\": 1, \"ceilings\": {\"model\": 3}}";
  Ceilings fourth = cached_or_measured(Device::cpu, model, 2, false, measure);
  EXPECT_EQ(measurements, 3) << "a corrupt cache must be measured again";
  EXPECT_EQ(parse(read_whole_file(path), problem)->matmul_tflops, 0.75) << problem;
  fs::remove_all(cache_home);
}

}  // namespace
}  // namespace attnprof::report
