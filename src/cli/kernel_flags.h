#pragma once
// Flags of `run` and `compare` that force a kernel choice instead of the automatic one
// (KernelOverrides, attnprof/kernel_overrides.h): --flash-schedule, --cudnn-engine, --deterministic,
// --cpu-isa.
#include <attnprof/tensor.h>
#include <attnprof/kernel_overrides.h>

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace attnprof::cli {

struct KernelFlags {
  std::string flash_schedule;
  int cudnn_engine = -1;
  std::string cpu_isa;
  bool deterministic = false;
  const CLI::Option* cudnn_engine_option = nullptr;  // whether --cudnn-engine was given

  void add_to(CLI::App& app);
  // Validated: a UsageError naming the flag and what it allows, or naming why it does not apply
  // to this run (a GPU kernel's flag on the CPU, the CPU's on a GPU, a variant that is not run, a
  // backward kernel's flag on a forward-only run: `backward` says whether the pass has a backward).
  KernelOverrides to_overrides(Device device, const std::vector<std::string>& variants, bool backward) const;
};

}  // namespace attnprof::cli
