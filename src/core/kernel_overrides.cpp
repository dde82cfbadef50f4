#include <attnprof/error.h>
#include <attnprof/kernel_overrides.h>

#include <atomic>
#include <mutex>

namespace attnprof {
namespace {

std::mutex& overrides_mutex() {
  static std::mutex mutex;
  return mutex;
}
KernelOverrides& current() {
  static KernelOverrides overrides;
  return overrides;
}
std::atomic<unsigned long long> generation{0};

}  // namespace

std::optional<std::string> kernel_overrides_error(const KernelOverrides& o) {
  const std::string& s = o.flash_schedule;
  if (!s.empty() && s != "sm80" && s != "sm90-cta-per-tile" && s != "sm90-tile-counter")
    return "flash_schedule '" + s +
           "': allowed sm80 (the mma.sync kernel), sm90-cta-per-tile (wgmma + TMA, one CTA per query tile), "
           "sm90-tile-counter (wgmma + TMA, tiles drawn from a device counter) or empty (automatic)";
  if (o.cudnn_engine < -1 || o.cudnn_engine > 1000)
    return "cudnn_engine " + std::to_string(o.cudnn_engine) + ": allowed a config index 0..1000 or -1 (automatic)";
  const std::string& isa = o.cpu_isa;
  if (!isa.empty() && isa != "portable" && isa != "avx512" && isa != "avx512_bf16" && isa != "avx512_amx")
    return "cpu_isa '" + isa + "': allowed portable, avx512, avx512_bf16, avx512_amx or empty (the best this CPU has)";
  return std::nullopt;
}

KernelOverrides kernel_overrides() {
  std::lock_guard<std::mutex> lock(overrides_mutex());
  return current();
}

void set_kernel_overrides(const KernelOverrides& overrides) {
  if (auto why = kernel_overrides_error(overrides)) throw UsageError(*why);
  std::lock_guard<std::mutex> lock(overrides_mutex());
  current() = overrides;
  generation.fetch_add(1, std::memory_order_release);
}

unsigned long long kernel_overrides_generation() { return generation.load(std::memory_order_acquire); }

}  // namespace attnprof
