#pragma once
// What a device backend module exports: a shared library (libattnprof_cuda.so) that libattnprof
// opens on first need, so a command that needs no GPU never maps the device's libraries. The
// module exports one C function, named kDeviceModuleEntry, returning this table.
#include <attnprof/memory.h>

#include <optional>
#include <string>

#include "ops/backend.h"
#include "profiler/device_activity.h"

namespace attnprof::ops {

// Changes whenever DeviceModule or Backend changes shape: a module built against another layout is refused.
inline constexpr int kDeviceModuleAbi = 2;

struct DeviceModule {
  int abi = kDeviceModuleAbi;
  std::optional<std::string> (*unavailable_reason)() = nullptr;  // nullopt when a device can be used
  Backend& (*backend)() = nullptr;                                // throws UsageError when none can
  profiler::DeviceActivityFactory activity_factory = nullptr;     // the device's activity collector
  memory::RawAllocator allocator;                                 // device memory (makes the backend on first use)
};

using DeviceModuleEntry = const DeviceModule* (*)();
inline constexpr const char* kDeviceModuleEntry = "attnprof_device_module";

}  // namespace attnprof::ops
