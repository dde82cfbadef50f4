#pragma once
// Kernel names recorded as `cpu_kernel` ranges ("cpu::softmax_bf16"). The profiler keeps a view of
// the name, so names built at run time are interned: one stable copy per distinct name, for good.
#include <string>

namespace attnprof::cpu {
const char* intern_name(const std::string& name);
}  // namespace attnprof::cpu
