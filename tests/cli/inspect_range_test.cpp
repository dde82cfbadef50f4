// `inspect --range NAME` through the binary, on a trace built here whose answers are worked out by
// hand: the per-range rows and the insights read the named ranges (a record_function range, a
// module as torch records it) instead of attn_fwd; a name the trace lacks is one error line, exit 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/cli_runner.h"

using attnprof::testing::CliResult;
using attnprof::testing::make_temp_dir;
using attnprof::testing::run_cli;

namespace {

std::string host(const std::string& cat, const std::string& name, int ts, int dur, int correlation = -1) {
  std::string args = correlation >= 0 ? ", \"args\": {\"correlation\": " + std::to_string(correlation) + "}" : "";
  return "{\"ph\": \"X\", \"cat\": \"" + cat + "\", \"name\": \"" + name + "\", \"pid\": 1, \"tid\": 1, \"ts\": " +
         std::to_string(ts) + ", \"dur\": " + std::to_string(dur) + args + "}";
}

std::string device(const std::string& cat, const std::string& name, int ts, int dur, int correlation) {
  return "{\"ph\": \"X\", \"cat\": \"" + cat + "\", \"name\": \"" + name + "\", \"pid\": 0, \"tid\": 7, \"ts\": " +
         std::to_string(ts) + ", \"dur\": " + std::to_string(dur) +
         ", \"args\": {\"device\": 0, \"stream\": 7, \"correlation\": " + std::to_string(correlation) + "}}";
}

// One step; two "my_block" ranges launching kernels of 3 + 5 µs and 7 µs; the second is also the
// module Attention_0 (a python_function "nn.Module: Attention_0"); an 11 µs kernel launched outside
// both; a GPU-only span "gpu_only".
//   my_block:    2 ranges, (3 + 5 + 7) / 2 = 7.5 µs device time and 1.5 kernels per range,
//                CPU (100 + 200) / 2 = 150 µs per range;
//   Attention_0: 1 range, 7 µs, 1 kernel, CPU 200 µs.
std::string hand_built_trace() {
  const std::vector<std::string> events = {
      host("user_annotation", "ProfilerStep#1", 0, 1000),
      host("user_annotation", "my_block", 100, 100),
      host("cuda_runtime", "cudaLaunchKernel", 110, 5, 1),
      host("cuda_runtime", "cudaLaunchKernel", 150, 5, 2),
      host("user_annotation", "my_block", 400, 200),
      host("python_function", "nn.Module: Attention_0", 401, 198),
      host("cuda_runtime", "cudaLaunchKernel", 420, 5, 3),
      host("cuda_runtime", "cudaLaunchKernel", 700, 5, 4),
      device("kernel", "kernel_a", 200, 3, 1),
      device("kernel", "kernel_b", 210, 5, 2),
      device("kernel", "kernel_c", 430, 7, 3),
      device("kernel", "kernel_d", 710, 11, 4),
      device("gpu_user_annotation", "gpu_only", 200, 50, -1),
  };
  std::string json = "{\"schemaVersion\": 1, \"traceEvents\": [\n";
  for (std::size_t i = 0; i < events.size(); ++i) json += (i ? ",\n" : "") + events[i];
  return json + "\n]}\n";
}

std::string write_trace() {
  const std::string path = make_temp_dir() + "/ranges.json";
  std::ofstream(path) << hand_built_trace();
  return path;
}

TEST(InspectRange, PerRangeRowsReadTheNamedRanges) {
  const std::string path = write_trace();
  CliResult r = run_cli({"inspect", "--format", "json", "--range", "my_block", "--range", "Attention_0", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["ranges"].size(), 2u) << r.out;
  const auto& block = j["ranges"][0];
  EXPECT_EQ(block["name"], "my_block");
  EXPECT_EQ(block["count"], 2);
  EXPECT_DOUBLE_EQ(block["kernels_per_range"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(block["device_time_per_range_us"].get<double>(), 7.5);
  EXPECT_DOUBLE_EQ(block["cpu_time_per_range_us"].get<double>(), 150.0);
  EXPECT_DOUBLE_EQ(block["device_time_us"].get<double>(), 15.0);
  const auto& module = j["ranges"][1];
  EXPECT_EQ(module["name"], "Attention_0");
  EXPECT_EQ(module["count"], 1);
  EXPECT_DOUBLE_EQ(module["device_time_per_range_us"].get<double>(), 7.0);
  // "forwards" reads the named ranges together: the module's range lies inside my_block's second,
  // so it counts once, with it.
  EXPECT_EQ(j["forwards"]["count"], 2);
  EXPECT_DOUBLE_EQ(j["forwards"]["device_time_per_forward_us"].get<double>(), 7.5);
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST(InspectRange, TextRowsAndInsightsSayWhichRanges) {
  const std::string path = write_trace();
  CliResult r = run_cli({"inspect", "--range", "my_block", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("my_block: 2 ranges; per range 1.50 kernels, 0.00 memcpy, 0.00 memset, device time 7.5 \u00b5s, "
                       "CPU time 150.0 \u00b5s"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("attn_fwd:"), std::string::npos) << r.out;
  // 150 µs of CPU per range against 7.5 µs of GPU work: cpu_bound, about the ranges read.
  CliResult j = run_cli({"inspect", "--format", "json", "--range", "my_block", path});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const nlohmann::json insights = nlohmann::json::parse(j.out)["insights"];
  bool cpu_bound = false;
  for (const auto& i : insights) {
    if (i["code"] != "cpu_bound") continue;
    cpu_bound = true;
    EXPECT_EQ(i["about"], nlohmann::json::array({"my_block"})) << i.dump();
    EXPECT_NE(i["text"].get<std::string>().find("150.0 \u00b5s of CPU per forward against 7.5 \u00b5s"),
              std::string::npos)
        << i.dump();
  }
  EXPECT_TRUE(cpu_bound) << j.out;
  // Without --range the same trace has no attn_fwd range: no per-range row, no "ranges", no
  // "forwards" (its means would be zeros), and cpu_bound is not said of its steps.
  CliResult plain = run_cli({"inspect", "--format", "json", path});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const nlohmann::json p = nlohmann::json::parse(plain.out);
  EXPECT_FALSE(p.contains("ranges"));
  EXPECT_FALSE(p.contains("forwards")) << plain.out;
  for (const auto& i : p["insights"]) EXPECT_NE(i["code"], "cpu_bound") << plain.out;
  // One name per --range: the traces after it stay traces.
  CliResult two = run_cli({"inspect", "--format", "json", "--no-insights", "--range", "my_block", path, path});
  ASSERT_EQ(two.exit_code, 0) << two.err;
  const nlohmann::json both = nlohmann::json::parse(two.out)["traces"];  // several traces: {"ranks", "traces"}
  ASSERT_EQ(both.size(), 2u);
  for (const auto& one : both) EXPECT_EQ(one["ranges"][0]["count"], 2) << two.out;
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST(InspectRange, AnUnknownNameIsOneLineListingTheRangesFound) {
  const std::string path = write_trace();
  CliResult r = run_cli({"inspect", "--range", "my_block", "--range", "no_such_range", path});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("--range 'no_such_range'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ranges found: my_block, Attention_0, ProfilerStep#1"), std::string::npos) << r.err;
  // A GPU-only span: the work is counted from the host range that launched it, which is missing.
  CliResult gpu = run_cli({"inspect", "--range", "gpu_only", path});
  EXPECT_EQ(gpu.exit_code, 2);
  EXPECT_EQ(gpu.out, "");
  EXPECT_NE(gpu.err.find("--range 'gpu_only'"), std::string::npos) << gpu.err;
  EXPECT_NE(gpu.err.find("gpu_user_annotation"), std::string::npos) << gpu.err;
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

}  // namespace
