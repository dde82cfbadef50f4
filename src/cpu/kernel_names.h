#pragma once
// Kernel names recorded as `cpu_kernel` ranges ("cpu::softmax_bf16"). The profiler keeps a view of
// the name, so names built at run time are interned: one stable copy per distinct name, for good.
#include <attnprof/dtype.h>

#include <string>

#include "cpu/cpu_features.h"

namespace attnprof::cpu {
const char* intern_name(const std::string& name);

// The fused kernels' names carry the compute path, so the trace and `attnprof run` say which ran:
// "cpu::flash_attention_bf16_avx512_amx". Where the CPU has AMX but this process may not use it
// (amx.h), a bf16 path says why: "cpu::flash_attention_bf16_avx512_bf16 [AMX off: <reason>]".
const char* fused_kernel_name(const char* what, DType dtype, Isa path);
}  // namespace attnprof::cpu
