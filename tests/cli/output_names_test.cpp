// Output files through the binary: one trace and table name per configuration (trace_stem), and
// --out naming the same thing in run, compare and sweep: the directory that receives them.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <set>
#include <string>

#include "cli/cli_runner.h"

using attnprof::testing::CliResult;
using attnprof::testing::make_temp_dir;
using attnprof::testing::read_whole_file;
using attnprof::testing::run_cli;

namespace fs = std::filesystem;

namespace {


std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.insert(entry.path().filename().string());
  return names;
}

TEST(OutputNames, RunsDifferingOnlyInDtypeLeaveTwoTraces) {
  const std::string out = make_temp_dir();
  auto run = [&](const char* dtype) {
    return run_cli({"run", "--device", "cpu", "--variant", "naive", "--batch", "1", "--heads", "2", "--seq", "64",
                    "--head-dim", "32", "--dtype", dtype, "--format", "json", "--out", out});
  };
  CliResult bf16 = run("bf16");
  ASSERT_EQ(bf16.exit_code, 0) << bf16.err;
  const std::string bf16_trace = read_whole_file(fs::path(out) / "1_2_64_32_naive_cpu.json.gz");
  ASSERT_FALSE(bf16_trace.empty());
  CliResult fp32 = run("fp32");
  ASSERT_EQ(fp32.exit_code, 0) << fp32.err;
  EXPECT_EQ(names_in(out), (std::set<std::string>{"1_2_64_32_naive_cpu.json.gz", "1_2_64_32_naive_cpu.txt",
                                                  "1_2_64_32_naive_cpu_fp32.json.gz", "1_2_64_32_naive_cpu_fp32.txt"}));
  EXPECT_EQ(nlohmann::json::parse(fp32.out)["trace"], out + "/1_2_64_32_naive_cpu_fp32.json.gz");
  EXPECT_EQ(read_whole_file(fs::path(out) / "1_2_64_32_naive_cpu.json.gz"), bf16_trace) << "the bf16 trace was written over";
  fs::remove_all(out);
  fs::remove_all(bf16.work_dir);
  fs::remove_all(fp32.work_dir);
}

// --cpu-isa portable runs the portable flash kernel (its table names the kernel that ran) into a
// file of its own beside the automatic choice's.
TEST(OutputNames, CpuIsaCapRunsThePortableKernelIntoItsOwnFiles) {
  const std::string out = make_temp_dir();
  auto run = [&](std::vector<std::string> more) {
    std::vector<std::string> args{"run", "--device", "cpu", "--variant", "flash", "--batch", "1", "--heads", "2",
                                  "--seq", "64", "--head-dim", "32", "--dtype", "fp32", "--out", out};
    args.insert(args.end(), more.begin(), more.end());
    return run_cli(args);
  };
  CliResult capped = run({"--cpu-isa", "portable"});
  ASSERT_EQ(capped.exit_code, 0) << capped.err;
  const std::string table = read_whole_file(fs::path(out) / "1_2_64_32_flash_cpu_fp32_isa-portable.txt");
  EXPECT_NE(table.find("cpu::flash_attention_fp32_portable"), std::string::npos) << table;
  CliResult best = run({});
  ASSERT_EQ(best.exit_code, 0) << best.err;
  EXPECT_EQ(names_in(out), (std::set<std::string>{"1_2_64_32_flash_cpu_fp32.json.gz", "1_2_64_32_flash_cpu_fp32.txt",
                                                  "1_2_64_32_flash_cpu_fp32_isa-portable.json.gz",
                                                  "1_2_64_32_flash_cpu_fp32_isa-portable.txt"}));
  fs::remove_all(out);
  fs::remove_all(capped.work_dir);
  fs::remove_all(best.work_dir);
}

// run, compare and sweep with the same --out DIR: each puts its traces and tables straight into
// DIR, under the same name for the same configuration, beside compare.json and sweep.csv/json.
TEST(OutputNames, OutIsTheDirectoryOfTheFilesInRunCompareAndSweep) {
  const std::string out = make_temp_dir();
  const std::vector<std::string> shape = {"--device", "cpu", "--batch", "1", "--heads", "2", "--seq", "64",
                                          "--head-dim", "32", "--threads", "1"};
  auto with_shape = [&](std::vector<std::string> args, std::vector<std::string> more) {
    args.insert(args.end(), shape.begin(), shape.end());
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  CliResult run = run_cli(with_shape({"run", "--variant", "naive"}, {"--dtype", "fp32", "--out", out}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(names_in(out), (std::set<std::string>{"1_2_64_32_naive_cpu_fp32_t1.json.gz", "1_2_64_32_naive_cpu_fp32_t1.txt"}));

  CliResult compare = run_cli(with_shape({"compare", "--variants", "naive,flash"}, {"--out", out}));
  ASSERT_EQ(compare.exit_code, 0) << compare.err;
  CliResult sweep = run_cli({"sweep", "--device", "cpu", "--batch", "1", "--heads", "2", "--seq", "64", "--head-dim",
                             "32", "--threads", "1", "--variants", "inplace", "--out", out});
  ASSERT_EQ(sweep.exit_code, 0) << sweep.err << sweep.out;
  EXPECT_EQ(names_in(out),
            (std::set<std::string>{"1_2_64_32_naive_cpu_fp32_t1.json.gz", "1_2_64_32_naive_cpu_fp32_t1.txt",
                                   "1_2_64_32_naive_cpu_t1.json.gz", "1_2_64_32_naive_cpu_t1.txt",
                                   "1_2_64_32_flash_cpu_t1.json.gz", "1_2_64_32_flash_cpu_t1.txt",
                                   "1_2_64_32_inplace_cpu_t1.json.gz", "1_2_64_32_inplace_cpu_t1.txt", "compare.json",
                                   "sweep.csv", "sweep.json"}));
  const nlohmann::json swept = nlohmann::json::parse(read_whole_file(fs::path(out) / "sweep.json"));
  ASSERT_EQ(swept["rows"].size(), 1u);
  EXPECT_EQ(swept["rows"][0]["trace_path"], out + "/1_2_64_32_inplace_cpu_t1.json.gz");
  fs::remove_all(out);
  for (const CliResult* r : {&run, &compare, &sweep}) fs::remove_all(r->work_dir);
}

}  // namespace
