// The one mapping from library parameter names to flags: the rewrite on its own (known answers
// worked out by hand), then through the binary, where the library's "head_dim 1024" must reach
// the user as "--head-dim 1024".
#include "cli/parameter_flags.h"

#include <gtest/gtest.h>

#include <string>

#include "cli/cli_runner.h"

namespace {

using attnprof::cli::flag_for_parameter;
using attnprof::cli::FlagTable;
using attnprof::cli::name_flags;
using attnprof::testing::run_cli;

TEST(ParameterFlags, EachParameterHasItsFlag) {
  EXPECT_EQ(flag_for_parameter("head_dim"), "--head-dim");
  EXPECT_EQ(flag_for_parameter("seq_q"), "--seq");
  EXPECT_EQ(flag_for_parameter("seq_k"), "--seq-k");
  EXPECT_EQ(flag_for_parameter("kv_heads"), "--kv-heads");
  EXPECT_EQ(flag_for_parameter("out_dir"), "--out");
  EXPECT_EQ(flag_for_parameter("dump_dir"), "--dump");
  EXPECT_EQ(flag_for_parameter("causal_align"), "--causal-align");
  EXPECT_EQ(flag_for_parameter("sort_by"), "--sort-by");
  EXPECT_EQ(flag_for_parameter("spec"), "");
}

TEST(ParameterFlags, RewritesTheParameterThatOpensEachClause) {
  EXPECT_EQ(name_flags("head_dim 257: the fused GPU kernels take 1..256"),
            "--head-dim 257: the fused GPU kernels take 1..256");
  EXPECT_EQ(name_flags("variant cudnn: dtype fp32: the cudnn variant takes bf16, fp16"),
            "--variant cudnn: --dtype fp32: the cudnn variant takes bf16, fp16");
  EXPECT_EQ(name_flags("active 0: must be between 1 and 1000000"), "--active 0: must be between 1 and 1000000");
}

TEST(ParameterFlags, LeavesEnglishWordsInsideASentence) {
  EXPECT_EQ(name_flags("kv_heads: must divide heads (16 heads, 5 kv heads); allowed: a divisor of 16"),
            "--kv-heads: must divide heads (16 heads, 5 kv heads); allowed: a divisor of 16");
  EXPECT_EQ(name_flags("variant cudnn: runs on device cuda only"), "--variant cudnn: runs on device cuda only");
}

TEST(ParameterFlags, RewritesAnUnderscoredNameAnywhereInASentence) {
  EXPECT_EQ(name_flags("seq_q: flash 1x16x8192x64 needs 4 GiB; the largest seq_q that fits is 4096"),
            "--seq: flash 1x16x8192x64 needs 4 GiB; the largest --seq that fits is 4096");
}

TEST(ParameterFlags, LeavesQuotedNamesPathsAndFlagsAlone) {
  EXPECT_EQ(name_flags("out_dir: '/tmp/out_dir/x' is not a directory"), "--out: '/tmp/out_dir/x' is not a directory");
  EXPECT_EQ(name_flags("variant: unknown variant 'head_dim'; allowed: naive|flash"),
            "--variant: unknown variant 'head_dim'; allowed: naive|flash");
  EXPECT_EQ(name_flags("--out: empty path"), "--out: empty path");
  EXPECT_EQ(name_flags("seq_qx 3: seq_q_ is not a parameter"), "seq_qx 3: seq_q_ is not a parameter");
  EXPECT_EQ(name_flags(""), "");
}

TEST(ParameterFlags, WhatTheUserTypedIsKeptVerbatim) {
  EXPECT_EQ(name_flags("batch: empty file", FlagTable::run, {"batch"}), "batch: empty file");
  EXPECT_EQ(name_flags("head_dim/x.json: cannot open; head_dim 3", FlagTable::run, {"head_dim/x.json"}),
            "head_dim/x.json: cannot open; --head-dim 3");
  // inspect's table holds no shape or schedule word: a trace's range names stay as they are
  EXPECT_EQ(name_flags("ranges found: warmup, active, variant", FlagTable::inspect), "ranges found: warmup, active, variant");
  EXPECT_EQ(name_flags("range_name 'x': none", FlagTable::inspect), "--range 'x': none");
}

TEST(ParameterFlags, TheBinaryNamesTheFlagForALibraryRefusal) {
  auto r = run_cli({"run", "--device", "cpu", "--variant", "flash", "--batch", "1", "--heads", "1", "--seq", "16",
                    "--head-dim", "1024", "--out", "{work}/traces"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "attnprof: --variant flash: --head-dim 1024: the CPU fused kernels take head dims 1..512\n");
}

}  // namespace
