// The backends this build assembles behind the op interface: the CPU one, installed when
// libattnprof loads. The CUDA one is a provider that opens its module on first need
// (run/cuda_module.cpp). Nothing below src/run names a backend.
#include "cpu/cpu_backend.h"
#include "ops/backend.h"

namespace attnprof {
namespace {

const bool g_cpu_installed = [] {
  ops::install_backend(Device::cpu, &cpu::cpu_backend());
  return true;
}();

}  // namespace
}  // namespace attnprof
