#include "cpu/cpu_features.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace attnprof::cpu {
namespace {
Isa isa_from_environment() {
  const char* value = std::getenv("ATTNPROF_CPU_ISA");
  if (value == nullptr) return Isa::avx512_bf16;
  if (std::strcmp(value, "portable") == 0) return Isa::portable;
  if (std::strcmp(value, "avx512") == 0) return Isa::avx512;
  return Isa::avx512_bf16;
}
std::atomic<int>& isa_limit() {
  static std::atomic<int> limit{static_cast<int>(isa_from_environment())};
  return limit;
}
}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::portable: return "portable";
    case Isa::avx512: return "avx512";
    case Isa::avx512_bf16: return "avx512_bf16";
  }
  return "portable";
}

Isa detected_isa() {
  static const Isa detected = [] {
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                  __builtin_cpu_supports("fma");
    if (avx512 && __builtin_cpu_supports("avx512bf16")) return Isa::avx512_bf16;
    if (avx512) return Isa::avx512;
#endif
    return Isa::portable;
  }();
  return detected;
}

Isa kernel_isa() {
  int limit = isa_limit().load(std::memory_order_relaxed);
  int detected = static_cast<int>(detected_isa());
  return static_cast<Isa>(limit < detected ? limit : detected);
}

void set_isa_limit(Isa limit) { isa_limit().store(static_cast<int>(limit), std::memory_order_relaxed); }

}  // namespace attnprof::cpu
