// The CUDA backend as a module: libattnprof_cuda.so, beside libattnprof.so, opened on the first
// call that needs the GPU (ops::backend(Device::cuda), ops::has_backend, the first CUDA tensor, a
// CUDA profiler). Until then no CUDA library is mapped: commands on the CPU, --help and inspect
// start without cudart, cuBLASLt, CUPTI and cuDNN. The module is opened by its absolute path in libattnprof's own
// directory, never by a bare name the loader would search for. Built only with ATTNPROF_HAVE_CUDA.
#include <attnprof/error.h>
#include <attnprof/memory.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "ops/backend.h"
#include "ops/device_module.h"
#include "profiler/device_activity.h"

namespace attnprof {
namespace {

struct LoadedModule {
  const ops::DeviceModule* module = nullptr;
  std::string error;  // one line, set when module is nullptr
};

std::string failure(const std::string& why) { return fmt::format("device cuda: {}; allowed here: cpu", why); }

LoadedModule load_cuda_module() {
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&load_cuda_module), &self) == 0 || self.dli_fname == nullptr)
    return {nullptr, failure("cannot find the directory of libattnprof (dladdr failed)")};
  std::filesystem::path library(self.dli_fname);
  if (!library.is_absolute())
    return {nullptr, failure(fmt::format("libattnprof was loaded as '{}', not by an absolute path, so the CUDA "
                                         "backend beside it cannot be found",
                                         self.dli_fname))};
  std::error_code ec;
  std::filesystem::path real = std::filesystem::weakly_canonical(library, ec);  // bin/../lib/x -> lib/x
  std::string path = ((ec ? library : real).parent_path() / ATTNPROF_CUDA_MODULE_FILE).string();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    std::string why = error != nullptr ? error : "unknown error";
    if (why.rfind(path + ": ", 0) == 0) why.erase(0, path.size() + 2);  // the loader names the file too
    return {nullptr, failure(fmt::format("cannot load the CUDA backend {}: {}", path, why))};
  }
  auto entry = reinterpret_cast<ops::DeviceModuleEntry>(dlsym(handle, ops::kDeviceModuleEntry));
  if (entry == nullptr)
    return {nullptr, failure(fmt::format("the CUDA backend {} does not export {}", path, ops::kDeviceModuleEntry))};
  const ops::DeviceModule* module = entry();
  if (module == nullptr || module->abi != ops::kDeviceModuleAbi)
    return {nullptr, failure(fmt::format("the CUDA backend {} was built for another libattnprof (interface {}, "
                                         "this one has {})",
                                         path, module ? module->abi : -1, ops::kDeviceModuleAbi))};
  return {module, {}};
}

// Opened once; a module that failed to load keeps failing with the same line.
const ops::DeviceModule& cuda_module() {
  static const LoadedModule loaded = load_cuda_module();
  if (loaded.module == nullptr) throw UsageError(loaded.error);
  return *loaded.module;
}

ops::Backend& cuda_backend() { return cuda_module().backend(); }

std::optional<std::string> cuda_unavailable() {
  try {
    return cuda_module().unavailable_reason();
  } catch (const Error& e) {
    return std::string(e.what());
  }
}

std::unique_ptr<profiler::DeviceActivitySource> cuda_activity_source() { return cuda_module().activity_factory(); }

// memory.cpp calls these under its own lock: opening the module must not call back into memory::
// (the module installs nothing when it loads; its allocator is handed over in the table).
void* cuda_allocate(std::size_t bytes) { return cuda_module().allocator.allocate(bytes); }
void cuda_release(void* ptr) { cuda_module().allocator.release(ptr); }

// make_inputs' upload of host inputs (core/attention.cpp), through the op interface.
void cuda_upload(Tensor& device_tensor, const Tensor& host_tensor) {
  ops::Backend& backend = ops::backend(Device::cuda);
  backend.copy(device_tensor, host_tensor);
  backend.synchronize();
}

// Installed when libattnprof loads; nothing is opened until one of them is called.
const bool g_cuda_installed = [] {
  ops::install_backend_provider(Device::cuda, {&cuda_backend, &cuda_unavailable});
  profiler::install_device_activity_factory(&cuda_activity_source);
  memory::install_allocator(Device::cuda, memory::RawAllocator{&cuda_allocate, &cuda_release});
  memory::install_uploader(Device::cuda, &cuda_upload);
  return true;
}();

}  // namespace
}  // namespace attnprof
