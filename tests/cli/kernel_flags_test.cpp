// The kernel-choice flags' checks (src/cli/kernel_flags.*) where the binary cannot reach them on a
// machine without a GPU: `--device cuda` is refused there before the flags are read.
#include "cli/kernel_flags.h"

#include <attnprof/error.h>
#include <gtest/gtest.h>

#include <string>

namespace {

using attnprof::Device;
using attnprof::UsageError;
using attnprof::cli::KernelFlags;

std::string refusal(const KernelFlags& flags, Device device, bool backward) {
  try {
    flags.to_overrides(device, {"flash", "cudnn"}, backward);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(KernelFlags, DeterministicSetsTheOverrideForFlashBackwardOnCuda) {
  KernelFlags flags;
  flags.deterministic = true;
  EXPECT_TRUE(flags.to_overrides(Device::cuda, {"flash"}, true).deterministic);
  flags.flash_schedule = "sm90-tile-counter";
  EXPECT_TRUE(flags.to_overrides(Device::cuda, {"flash"}, true).deterministic);
  EXPECT_FALSE(KernelFlags{}.to_overrides(Device::cuda, {"flash"}, true).deterministic);
}

// sm80's backward is the deterministic one already: the pair would change nothing.
TEST(KernelFlags, DeterministicWithTheSm80ScheduleIsRefused) {
  KernelFlags flags;
  flags.deterministic = true;
  flags.flash_schedule = "sm80";
  EXPECT_EQ(refusal(flags, Device::cuda, true),
            "--deterministic: --flash-schedule sm80 runs flash's deterministic backward already (allowed with the "
            "automatic or an sm90 schedule)");
}

TEST(KernelFlags, DeterministicOnAForwardOnlyCudaRunIsRefused) {
  KernelFlags flags;
  flags.deterministic = true;
  EXPECT_EQ(refusal(flags, Device::cuda, false),
            "--deterministic: chooses flash's backward kernel; this run's --pass is forward (allowed with --pass "
            "backward or train)");
}

}  // namespace
