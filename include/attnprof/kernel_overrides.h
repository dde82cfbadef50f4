#pragma once
// Kernel choices a run can force instead of the automatic ones, for timing one path against
// another. Filled once at the top (the command line's --flash-schedule, --cudnn-engine,
// --deterministic and --cpu-isa, a benchmark's knobs, a test) and installed for the process by run_variant (RunOptions::
// kernels) or set_kernel_overrides; the kernels read kernel_overrides() and no environment variable.
#include <optional>
#include <string>

namespace attnprof {

struct KernelOverrides {
  // flash on a GPU: "" (automatic: the sm_90a kernel's automatic schedule on compute capability 9.0,
  // the mma.sync kernel elsewhere), "sm80" (the mma.sync kernel), "sm90-cta-per-tile" or
  // "sm90-tile-counter" (the sm_90a kernel on that schedule; compute capability 9.0 only).
  std::string flash_schedule;
  // cudnn: build the n-th engine config of cuDNN's heuristics (mode A) alone, untimed; -1: time the
  // first few that finalize and keep the fastest.
  int cudnn_engine = -1;
  // flash's backward on a GPU: the kernels without atomics (attention_backward.cu: every gradient
  // bit-identical run to run) also where the sm_90a kernel would run (it adds dQ with atomics).
  bool deterministic = false;
  // CPU kernels: the best ISA they may use, "portable", "avx512", "avx512_bf16" or "avx512_amx";
  // "": the best this CPU has.
  std::string cpu_isa;
};

// Why `overrides` cannot be used, naming the field and what it allows ("flash_schedule 'x': allowed
// ..."); nullopt when every field is valid (a device may still refuse a schedule when it runs).
std::optional<std::string> kernel_overrides_error(const KernelOverrides& overrides);

// The overrides in force (all automatic until set). set_kernel_overrides validates them first:
// UsageError with kernel_overrides_error's line.
KernelOverrides kernel_overrides();
void set_kernel_overrides(const KernelOverrides& overrides);
// Counts set_kernel_overrides calls, so a hot path can keep what it derived from the overrides until
// they change.
unsigned long long kernel_overrides_generation();

}  // namespace attnprof
