#include "cli/kernel_flags.h"

#include <attnprof/error.h>
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>

#include "cli/shape_flags.h"

namespace attnprof::cli {

void KernelFlags::add_to(CLI::App& app) {
  const char* group = "Kernel choice (default: automatic)";
  app.add_option("--flash-schedule", flash_schedule,
                 "flash on a GPU: sm80 (the mma.sync kernel), sm90-cta-per-tile or sm90-tile-counter "
                 "(the sm_90a kernel's two schedules; compute capability 9.0)")
      ->group(group);
  cudnn_engine_option =
      app.add_option("--cudnn-engine", cudnn_engine,
                     "cudnn: build the n-th engine config of cuDNN's heuristics alone, untimed (0, 1, 2, ...)")
          ->check(strict_integer())
          ->group(group);
  app.add_flag("--deterministic", deterministic,
               "flash's backward on a GPU: the kernels without atomics (dQ summed in a fixed order, bit-identical "
               "run to run) also on compute capability 9.0, whose sm_90a kernel adds dQ with atomics")
      ->group(group);
  app.add_option("--cpu-isa", cpu_isa,
                 "CPU kernels: the best ISA they may use: portable, avx512, avx512_bf16 or avx512_amx")
      ->group(group);
}

KernelOverrides KernelFlags::to_overrides(Device device, const std::vector<std::string>& variants,
                                          bool backward) const {
  KernelOverrides overrides;
  // Each field checked alone, so the error names its flag.
  auto check = [](const KernelOverrides& one, const char* flag, const std::string& value) {
    if (auto why = kernel_overrides_error(one)) {
      const std::string reason = why->substr(why->find("allowed"));
      throw UsageError(fmt::format("{} {}: {}", flag, value, reason));
    }
  };
  // A flag that would change nothing in this run is refused, not ignored.
  auto applies = [&](const char* flag, const std::string& value, Device on, const char* variant) {
    if (variant != nullptr && std::find(variants.begin(), variants.end(), variant) == variants.end())
      throw UsageError(fmt::format("{} {}: chooses the {} variant's kernel; this run does not run {}", flag, value,
                                   variant, variant));
    if (device != on)
      throw UsageError(fmt::format("{} {}: chooses a kernel on --device {}; this run is on --device {}", flag, value,
                                   device_name(on), device_name(device)));
  };
  overrides.flash_schedule = flash_schedule;
  check(overrides, "--flash-schedule", flash_schedule);
  if (!flash_schedule.empty()) applies("--flash-schedule", flash_schedule, Device::cuda, "flash");
  if (cudnn_engine_option != nullptr && cudnn_engine_option->count() > 0) {
    overrides.cudnn_engine = cudnn_engine;
    if (cudnn_engine < 0 || kernel_overrides_error(overrides))
      throw UsageError(fmt::format("--cudnn-engine {}: allowed a config index 0..1000", cudnn_engine));
    applies("--cudnn-engine", std::to_string(cudnn_engine), Device::cuda, "cudnn");
  }
  if (deterministic) {
    overrides.deterministic = true;
    if (std::find(variants.begin(), variants.end(), "flash") == variants.end())
      throw UsageError("--deterministic: chooses the flash variant's backward kernel; this run does not run flash");
    if (!backward)
      throw UsageError("--deterministic: chooses flash's backward kernel; this run's --pass is forward (allowed with "
                       "--pass backward or train)");
    if (device != Device::cuda)
      throw UsageError(fmt::format("--deterministic: chooses flash's backward kernel on --device cuda; this run is on "
                                   "--device {}",
                                   device_name(device)));
    if (flash_schedule == "sm80")
      throw UsageError("--deterministic: --flash-schedule sm80 runs flash's deterministic backward already (allowed "
                       "with the automatic or an sm90 schedule)");
  }
  overrides.cpu_isa = cpu_isa;
  check(overrides, "--cpu-isa", cpu_isa);
  if (!cpu_isa.empty()) applies("--cpu-isa", cpu_isa, Device::cpu, nullptr);
  return overrides;
}

}  // namespace attnprof::cli
