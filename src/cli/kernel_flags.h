#pragma once
// Flags of `run` and `compare` that force a kernel choice instead of the automatic one
// (KernelOverrides, attnprof/kernel_overrides.h): --flash-schedule, --cudnn-engine, --cpu-isa.
#include <attnprof/kernel_overrides.h>

#include <CLI/CLI.hpp>

#include <string>

namespace attnprof::cli {

struct KernelFlags {
  std::string flash_schedule;
  int cudnn_engine = -1;
  std::string cpu_isa;

  void add_to(CLI::App& app);
  // Validated: a UsageError naming the flag and what it allows.
  KernelOverrides to_overrides() const;
};

}  // namespace attnprof::cli
