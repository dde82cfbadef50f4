#pragma once
// Whether this process may run AMX (AMX-TILE + AMX-BF16) code, and why not. Probed once per
// process: CPUID leaf 7 (EDX bit 24 AMX-TILE, bit 22 AMX-BF16), leaf 0x1D (palette 1 offers 8
// tiles of 16 rows × 64 bytes, the shape microkernel_amx.h configures), XCR0 (the OS saves the
// tile state), then Linux's per-process permission for the 8 KiB XTILEDATA state
// (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), kernel 5.16+): without it the first
// tile instruction kills the process with SIGILL. Compiled without AMX flags.
#include <string>

namespace attnprof::cpu::amx {

struct Support {
  bool cpu_has_amx = false;  // CPUID reports AMX-TILE and AMX-BF16
  bool usable = false;       // ... and every check above passed: the AMX kernels may run
  std::string reason;        // why not, when !usable ("no AMX-TILE/AMX-BF16 on this CPU", ...)
};

const Support& support();

}  // namespace attnprof::cpu::amx
