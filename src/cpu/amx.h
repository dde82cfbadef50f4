#pragma once
// Whether this process may run AMX (AMX-TILE + AMX-BF16) code, and why not. Probed once per
// process: CPUID leaf 7 (EDX bit 24 AMX-TILE, bit 22 AMX-BF16), leaf 0x1D (palette 1 offers 8
// tiles of 16 rows × 64 bytes, the shape microkernel_amx.h configures), XCR0 (the OS saves the
// tile state), then Linux's per-process permission for the 8 KiB XTILEDATA state
// (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), kernel 5.16+): without it the first
// tile instruction kills the process with SIGILL. Compiled without AMX flags.
#include <cstdint>
#include <string>

namespace attnprof::cpu::amx {

struct Support {
  bool cpu_has_amx = false;  // CPUID reports AMX-TILE and AMX-BF16
  bool usable = false;       // ... and every check above passed: the AMX kernels may run
  std::string reason;        // why not, when !usable ("no AMX-TILE/AMX-BF16 on this CPU", ...)
};

const Support& support();

// Throws Error: a tile configuration whose blocks are not multiples of 32 (a programming error:
// cpu_backend.cpp static_asserts its configurations). Out of line here so that attention_amx.cpp,
// compiled with AVX-512 and AMX flags, instantiates no std::string or exception code of its own
// (the linker keeps one copy of such inline functions for the whole library and could pick that one).
[[noreturn]] void throw_untileable(std::int64_t block_q, std::int64_t block_k);

}  // namespace attnprof::cpu::amx
