// Bad input: one clear line on stderr naming the flag (and what is allowed), exit code 2, nothing
// on stdout, no file left behind, never a crash or a hang.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/cli_runner.h"

using attnprof::testing::CliResult;
using attnprof::testing::run_cli;

namespace {

struct BadInput {
  std::string label;
  std::vector<std::string> args;
  std::string expected;  // must appear in the one stderr line
};

std::ostream& operator<<(std::ostream& os, const BadInput& c) { return os << c.label; }

// A small valid run with `extra` flags added; a flag in `extra` replaces the base's value.
std::vector<std::string> run_args(std::vector<std::string> extra) {
  std::vector<std::string> base{"--device", "cpu", "--batch", "1", "--heads", "2", "--seq", "16", "--out", "{work}/traces"};
  std::vector<std::string> args{"run"};
  for (std::size_t i = 0; i < base.size(); i += 2) {
    if (std::find(extra.begin(), extra.end(), base[i]) == extra.end()) {
      args.push_back(base[i]);
      args.push_back(base[i + 1]);
    }
  }
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::vector<BadInput> cases() {
  return {
      {"batch_zero", run_args({"--batch", "0"}), "--batch"},
      {"batch_negative", run_args({"--batch", "-3"}), "--batch"},
      {"batch_not_a_number", run_args({"--batch", "abc"}), "--batch"},
      {"batch_overflows_int64", run_args({"--batch", "99999999999999999999999"}), "--batch"},
      {"heads_zero", run_args({"--heads", "0"}), "--heads"},
      {"seq_zero", run_args({"--seq", "0"}), "--seq"},
      {"seq_negative", run_args({"--seq", "-1"}), "--seq"},
      {"seq_fraction", run_args({"--seq", "1.5"}), "--seq"},
      {"seq_k_zero", run_args({"--seq-k", "0"}), "--seq-k"},
      {"head_dim_zero", run_args({"--head-dim", "0"}), "--head-dim"},
      {"head_dim_negative", run_args({"--head-dim", "-64"}), "--head-dim"},
      {"kv_heads_zero", run_args({"--kv-heads", "0"}), "--kv-heads"},
      {"kv_heads_not_dividing", run_args({"--heads", "16", "--kv-heads", "5"}), "--kv-heads"},
      {"kv_heads_above_heads", run_args({"--heads", "16", "--kv-heads", "32"}), "--kv-heads"},
      {"scores_overflow_64_bits", run_args({"--batch", "100000000", "--seq", "100000000"}), "overflows"},
      {"seq_overflow_64_bits", run_args({"--seq", "9000000000000"}), "overflows"},
      {"dtype_unknown", run_args({"--dtype", "fp8"}), "--dtype"},
      {"dtype_int32", run_args({"--dtype", "int32"}), "--dtype"},
      {"dtype_bool", run_args({"--dtype", "bool"}), "--dtype"},
      {"dtype_empty", run_args({"--dtype", ""}), "--dtype"},
      {"layout_unknown", run_args({"--layout", "bsdh"}), "--layout"},
      {"device_unknown", run_args({"--device", "tpu"}), "--device"},
      {"variant_unknown", run_args({"--variant", "nope"}), "--variant"},
      {"variant_wrong_case", run_args({"--variant", "Flash"}), "--variant"},
      {"cudnn_on_cpu", run_args({"--variant", "cudnn"}), "cudnn"},
      {"format_unknown", run_args({"--format", "xml"}), "--format"},
      {"threads_negative", run_args({"--threads", "-1"}), "--threads"},
      {"threads_absurd", run_args({"--threads", "100000"}), "--threads"},
      {"unknown_flag", run_args({"--bogus-flag"}), "--bogus-flag"},
      {"misspelt_flag", run_args({"--causl"}), "--causl"},
      {"causal_and_no_causal", run_args({"--causal", "--no-causal"}), "--no-causal"},
      {"causal_align_unknown", run_args({"--causal-align", "middle"}), "--causal-align: unknown alignment 'middle'"},
      {"causal_align_underscore", run_args({"--causal-align", "bottom_right"}), "allowed: top-left, bottom-right"},
      {"causal_align_empty", run_args({"--causal-align", ""}), "--causal-align"},
      {"causal_align_without_causal", run_args({"--no-causal", "--causal-align", "bottom-right"}),
       "--causal-align: cannot be used with --no-causal"},
      {"compare_causal_align_unknown", {"compare", "--device", "cpu", "--causal-align", "Bottom-Right"}, "--causal-align"},
      {"compare_causal_align_without_causal",
       {"compare", "--device", "cpu", "--no-causal", "--causal-align", "top-left"},
       "--causal-align: cannot be used with --no-causal"},
      {"sweep_causal_align_unknown", {"sweep", "--device", "cpu", "--causal-align", "diagonal", "--out", "{work}/s"},
       "--causal-align"},
      {"sweep_causal_align_without_causal",
       {"sweep", "--device", "cpu", "--no-causal", "--causal-align", "bottom-right", "--out", "{work}/s"},
       "--causal-align: cannot be used with --no-causal"},
      {"no_profile_with_out", {"run", "--device", "cpu", "--no-profile", "--out", "{work}/t"}, "--out"},
      {"active_zero", run_args({"--active", "0"}), "--active"},
      {"wait_negative", run_args({"--wait", "-1"}), "--wait"},
      {"repeat_zero", {"run", "--device", "cpu", "--no-profile", "--repeat", "0"}, "--repeat"},
      {"compare_rounds_zero", {"compare", "--device", "cpu", "--rounds", "0"}, "--rounds: must be 1..100 (got 0)"},
      {"run_has_no_rounds", {"run", "--device", "cpu", "--rounds", "2"}, "--rounds"},
      {"same_flag_twice", {"run", "--device", "cpu", "--seq", "16", "--seq", "32"}, "--seq"},
      {"seed_negative", run_args({"--seed", "-1"}), "--seed"},
      {"out_unwritable", run_args({"--out", "/proc/attnprof-traces"}), "--out"},
      {"out_is_a_file", run_args({"--out", "/etc/hostname"}), "--out"},
      {"dump_unwritable", run_args({"--dump", "/proc/attnprof-dump"}), "--dump"},
      {"compare_unknown_variant", {"compare", "--device", "cpu", "--variants", "naive,bogus"}, "--variants"},
      {"compare_empty_variants", {"compare", "--device", "cpu", "--variants", ","}, "--variants"},
      {"compare_bad_seq", {"compare", "--device", "cpu", "--seq", "0"}, "--seq"},
      {"unknown_subcommand", {"frobnicate"}, "frobnicate"},
      {"sweep_seq_zero", {"sweep", "--device", "cpu", "--seq", "0", "--out", "{work}/s"}, "--seq"},
      {"sweep_forwards_zero", {"sweep", "--device", "cpu", "--forwards", "0", "--out", "{work}/s"}, "--forwards"},
      {"sweep_seq_not_increasing", {"sweep", "--device", "cpu", "--seq", "256,128", "--out", "{work}/s"}, "--seq"},
      {"sweep_batch_overflows", {"sweep", "--device", "cpu", "--batch", "99999999999999999999", "--out", "{work}/s"},
       "--batch"},
      {"sweep_kv_heads_zero", {"sweep", "--device", "cpu", "--kv-heads", "0", "--out", "{work}/s"}, "--kv-heads"},
      {"sweep_seed_negative", {"sweep", "--device", "cpu", "--seed", "-1", "--out", "{work}/s"}, "--seed"},
      {"sweep_unknown_variant", {"sweep", "--device", "cpu", "--variants", "bogus", "--out", "{work}/s"}, "--variants"},
      {"report_missing_directory", {"report", "{work}/nothing-here"}, "nothing-here"},
      {"inspect_missing_file", {"inspect", "{work}/missing.json.gz"}, "missing.json.gz"},
      {"inspect_not_json", {"inspect", "/etc/hostname"}, "not JSON"},
      {"inspect_format_unknown", {"inspect", "--format", "xml", "/etc/hostname"}, "--format"},
      {"inspect_expect_unknown_word", {"inspect", "--expect", "gemm,frobnicate", "/etc/hostname"}, "--expect"},
      {"inspect_diff_one_trace", {"inspect", "--diff", "/etc/hostname"}, "--diff"},
      {"inspect_diff_three_traces", {"inspect", "--diff", "/etc/hostname", "/etc/hostname", "/etc/hostname"}, "--diff"},
      {"inspect_max_traces_zero", {"inspect", "--max-traces", "0", "/etc/hostname"}, "--max-traces"},
      {"inspect_over_max_traces", {"inspect", "--max-traces", "1", "/etc/hostname", "/etc/hostname"}, "--max-traces"},
      {"inspect_directory_without_traces", {"inspect", "{work}"}, "no .json or .json.gz"},
      {"inspect_stdin_twice", {"inspect", "--diff", "-", "-"}, "'-' (standard input) given more than once"},
      {"min_time_negative", {"run", "--device", "cpu", "--min-time", "-0.5"}, "--min-time: must be 0..60 seconds"},
      {"flash_schedule_unknown", run_args({"--flash-schedule", "sm70"}), "--flash-schedule sm70: allowed sm80"},
      {"flash_schedule_on_cpu", run_args({"--flash-schedule", "sm80"}),
       "--flash-schedule sm80: chooses a kernel on --device cuda; this run is on --device cpu"},
      {"flash_schedule_without_flash", run_args({"--variant", "naive", "--flash-schedule", "sm80"}),
       "--flash-schedule sm80: chooses the flash variant's kernel; this run does not run flash"},
      {"deterministic_without_flash", run_args({"--variant", "naive", "--pass", "backward", "--deterministic"}),
       "--deterministic: chooses the flash variant's backward kernel; this run does not run flash"},
      {"deterministic_forward", run_args({"--variant", "flash", "--deterministic"}),
       "--deterministic: chooses flash's backward kernel; this run's --pass is forward (allowed with --pass backward or "
       "train)"},
      {"deterministic_on_cpu", run_args({"--variant", "flash", "--pass", "train", "--deterministic"}),
       "--deterministic: chooses flash's backward kernel on --device cuda; this run is on --device cpu"},
      {"cudnn_engine_minus_one", run_args({"--cudnn-engine", "-1"}), "--cudnn-engine -1: allowed a config index 0..1000"},
      {"cudnn_engine_too_big", run_args({"--cudnn-engine", "5000"}), "--cudnn-engine 5000: allowed a config index 0..1000"},
      {"cudnn_engine_on_cpu", run_args({"--variant", "cudnn", "--cudnn-engine", "2"}),
       "--cudnn-engine 2: chooses a kernel on --device cuda; this run is on --device cpu"},
      {"compare_cudnn_engine_without_cudnn",
       {"compare", "--device", "cpu", "--variants", "naive,flash", "--cudnn-engine", "2", "--out", "{work}/c"},
       "--cudnn-engine 2: chooses the cudnn variant's kernel; this run does not run cudnn"},
      {"cudnn_engine_negative", run_args({"--cudnn-engine", "-2"}), "--cudnn-engine -2"},
      {"cpu_isa_misspelt", run_args({"--cpu-isa", "avx512bf16"}), "--cpu-isa avx512bf16: allowed portable"},
      {"compare_cpu_isa_misspelt",
       {"compare", "--device", "cpu", "--cpu-isa", "avx2", "--out", "{work}/c"}, "--cpu-isa avx2"},
      {"memory_beyond_machine", run_args({"--variant", "naive", "--batch", "4096", "--heads", "64", "--seq", "65536"}),
       "largest --seq"},
  };
}

class BadInputTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(BadInputTest, OneLineExitTwoNoFiles) {
  const BadInput& c = GetParam();
  CliResult r = run_cli(c.args, 60);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "stderr: " << r.err;
  EXPECT_NE(r.err.find(c.expected), std::string::npos) << "stderr: " << r.err;
  EXPECT_TRUE(r.out.empty()) << "stdout: " << r.out;
  EXPECT_TRUE(r.files.empty()) << "left " << r.files.size() << " file(s), first " << (r.files.empty() ? "" : r.files[0]);
  std::filesystem::remove_all(r.work_dir);
}

INSTANTIATE_TEST_SUITE_P(Cli, BadInputTest, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<BadInput>& info) { return info.param.label; });

TEST(BadInputBattery, HasAtLeastFortyCases) { EXPECT_GE(cases().size(), 40u); }

}  // namespace
