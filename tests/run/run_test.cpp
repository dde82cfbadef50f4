// run_variant's scope: what a run sets for itself does not outlive it.
#include <attnprof/kernel_overrides.h>
#include <attnprof/run.h>
#include <gtest/gtest.h>

#include "cpu/cpu_features.h"

using namespace attnprof;

// A run with --cpu-isa portable runs the portable kernels, and afterwards the overrides are the
// automatic ones again (the ceilings measured after `attnprof run` must not inherit them), as
// they were before the run.
TEST(RunVariant, KernelOverridesHoldForTheRunOnly) {
  const cpu::Isa best = cpu::kernel_isa();
  RunOptions options;
  options.variant = "flash";
  options.spec.batch = 1;
  options.spec.heads = 2;
  options.spec.kv_heads = 2;
  options.spec.seq_q = options.spec.seq_k = 64;
  options.spec.head_dim = 32;
  options.spec.dtype = DType::fp32;
  options.spec.device = Device::cpu;
  options.out_dir.clear();
  options.kernels.cpu_isa = "portable";
  const RunResult result = run_variant(options);
  EXPECT_NE(result.summary, "");
  const KernelOverrides after = kernel_overrides();
  EXPECT_EQ(after.cpu_isa, "");
  EXPECT_EQ(after.flash_schedule, "");
  EXPECT_EQ(after.cudnn_engine, -1);
  EXPECT_EQ(cpu::kernel_isa(), best);
}
