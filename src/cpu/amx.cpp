#include "cpu/amx.h"

#include <attnprof/error.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace attnprof::cpu::amx {
namespace {

#if defined(__x86_64__) && defined(__linux__)
// From the Linux UAPI (asm/prctl.h) and the XSAVE feature numbers; spelled out because glibc's
// headers of Debian 12 do not all carry them.
constexpr long kArchGetXcompPerm = 0x1022;
constexpr long kArchReqXcompPerm = 0x1023;
constexpr long kXfeatureXtiledata = 18;
constexpr std::uint64_t kXcr0TileBits = (1ull << 17) | (1ull << 18);  // XTILECFG, XTILEDATA

bool cpuid_count(unsigned leaf, unsigned subleaf, unsigned regs[4]) {
  if (__get_cpuid_max(0, nullptr) < leaf) return false;
  __cpuid_count(leaf, subleaf, regs[0], regs[1], regs[2], regs[3]);
  return true;
}

bool cpu_reports_amx() {
  unsigned r[4];
  if (!cpuid_count(7, 0, r)) return false;
  const unsigned edx = r[3];
  return ((edx >> 24) & 1u) != 0 && ((edx >> 22) & 1u) != 0;
}

// Palette 1: EBX[15:0] bytes per row, EBX[31:16] tile registers, ECX[15:0] rows.
bool palette_fits() {
  unsigned r[4];
  if (!cpuid_count(0x1d, 0, r) || r[0] < 1) return false;
  if (!cpuid_count(0x1d, 1, r)) return false;
  return (r[1] & 0xffffu) >= 64 && (r[1] >> 16) >= 8 && (r[2] & 0xffffu) >= 16;
}

bool os_saves_tile_state() {
  unsigned r[4];
  if (!cpuid_count(1, 0, r) || ((r[2] >> 27) & 1u) == 0) return false;  // OSXSAVE: xgetbv allowed
  std::uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  const std::uint64_t xcr0 = (static_cast<std::uint64_t>(hi) << 32) | lo;
  return (xcr0 & kXcr0TileBits) == kXcr0TileBits;
}

Support probe() {
  Support s;
  s.cpu_has_amx = cpu_reports_amx();
  if (!s.cpu_has_amx) {
    s.reason = "no AMX-TILE/AMX-BF16 on this CPU";
    return s;
  }
  if (!palette_fits()) {
    s.reason = "AMX palette 1 lacks 8 tiles of 16 rows x 64 bytes";
    return s;
  }
  if (!os_saves_tile_state()) {
    s.reason = "the OS does not enable the AMX tile state (XCR0 bits 17, 18)";
    return s;
  }
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) {
    s.reason = std::string("arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA) failed: ") + std::strerror(errno);
    return s;
  }
  unsigned long permitted = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &permitted) != 0 || ((permitted >> kXfeatureXtiledata) & 1ul) == 0) {
    s.reason = "arch_prctl(ARCH_GET_XCOMP_PERM) does not list XTILEDATA after the request";
    return s;
  }
  s.usable = true;
  return s;
}
#else
Support probe() {
  Support s;
  s.reason = "AMX needs x86-64 Linux";
  return s;
}
#endif

}  // namespace

void throw_untileable(std::int64_t block_q, std::int64_t block_k) {
  throw Error("cpu attention (AMX): block_q and block_k must be multiples of 32, got " + std::to_string(block_q) +
              " x " + std::to_string(block_k));
}

const Support& support() {
  static const Support probed = probe();  // the permission is asked once per process
  return probed;
}

}  // namespace attnprof::cpu::amx
