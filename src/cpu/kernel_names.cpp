#include "cpu/kernel_names.h"

#include <fmt/format.h>

#include <mutex>
#include <set>

#include "cpu/amx.h"

namespace attnprof::cpu {

const char* intern_name(const std::string& name) {
  static std::mutex mutex;
  static std::set<std::string> names;  // node-based: element addresses never move
  std::lock_guard lock(mutex);
  return names.insert(name).first->c_str();
}

const char* fused_kernel_name(const char* what, DType dtype, Isa path) {
  std::string name = fmt::format("cpu::{}_{}_{}", what, dtype_name(dtype), isa_name(path));
  const amx::Support& amx = amx::support();
  if (dtype == DType::bf16 && path == Isa::avx512_bf16 && amx.cpu_has_amx && !amx.usable) {
    name += fmt::format(" [AMX off: {}]", amx.reason);
  }
  return intern_name(name);
}

}  // namespace attnprof::cpu
