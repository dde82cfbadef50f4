#pragma once
// What this CPU can run, detected once. Kernels dispatch on kernel_isa() at run time, so one binary
// runs on any x86-64 (portable loops) and uses AVX-512 / AVX512_BF16 / AMX where present.
namespace attnprof::cpu {

// Ordered: each level includes the ones below it.
enum class Isa { portable = 0, avx512 = 1, avx512_bf16 = 2, avx512_amx = 3 };

const char* isa_name(Isa isa);  // "portable", "avx512", "avx512_bf16", "avx512_amx"

// The best ISA this CPU supports: avx512 needs avx512f/bw/vl/dq + fma; avx512_bf16 adds vdpbf16ps;
// avx512_amx adds AMX-TILE + AMX-BF16 with the OS's permission (amx.h says why not, when not).
Isa detected_isa();

// detected_isa() capped by set_isa_limit() and by KernelOverrides::cpu_isa (attnprof/kernel_overrides.h;
// the command line's --cpu-isa), so tests and users can exercise the fallbacks on any machine.
Isa kernel_isa();
void set_isa_limit(Isa limit);

// The cap a KernelOverrides::cpu_isa value sets: its level by name, no cap (avx512_amx) when null or
// empty; an unknown name is a UsageError naming the allowed ones.
Isa isa_limit_from(const char* value);

}  // namespace attnprof::cpu
