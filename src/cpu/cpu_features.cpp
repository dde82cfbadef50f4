#include "cpu/cpu_features.h"

#include <attnprof/error.h>
#include <attnprof/kernel_overrides.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>

#include "cpu/amx.h"

namespace attnprof::cpu {
namespace {
std::atomic<int>& isa_limit() {
  static std::atomic<int> limit{static_cast<int>(Isa::avx512_amx)};
  return limit;
}

// KernelOverrides::cpu_isa's cap, re-read only when the overrides change.
int override_limit() {
  static std::atomic<unsigned long long> seen{~0ull};
  static std::atomic<int> limit{static_cast<int>(Isa::avx512_amx)};
  const unsigned long long generation = kernel_overrides_generation();
  if (seen.load(std::memory_order_acquire) != generation) {
    limit.store(static_cast<int>(isa_limit_from(kernel_overrides().cpu_isa.c_str())), std::memory_order_relaxed);
    seen.store(generation, std::memory_order_release);
  }
  return limit.load(std::memory_order_relaxed);
}
}  // namespace

Isa isa_limit_from(const char* value) {
  if (value == nullptr || *value == '\0') return Isa::avx512_amx;
  for (Isa isa : {Isa::portable, Isa::avx512, Isa::avx512_bf16, Isa::avx512_amx}) {
    if (std::strcmp(value, isa_name(isa)) == 0) return isa;
  }
  // A misspelt cap must not silently run the best path.
  throw UsageError(std::string("cpu_isa '") + value + "': unknown ISA; allowed: portable, avx512, avx512_bf16, avx512_amx");
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::portable: return "portable";
    case Isa::avx512: return "avx512";
    case Isa::avx512_bf16: return "avx512_bf16";
    case Isa::avx512_amx: return "avx512_amx";
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
    if (avx512 && __builtin_cpu_supports("avx512bf16")) return amx::support().usable ? Isa::avx512_amx : Isa::avx512_bf16;
    if (avx512) return Isa::avx512;
#endif
    return Isa::portable;
  }();
  return detected;
}

Isa kernel_isa() {
  const int limit = std::min(isa_limit().load(std::memory_order_relaxed), override_limit());
  const int detected = static_cast<int>(detected_isa());
  return static_cast<Isa>(limit < detected ? limit : detected);
}

void set_isa_limit(Isa limit) { isa_limit().store(static_cast<int>(limit), std::memory_order_relaxed); }

}  // namespace attnprof::cpu
