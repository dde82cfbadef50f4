#pragma once
#include <attnprof/attention.h>

#include <cstdint>

#include "ops/backend.h"

namespace attnprof::cpu {
// The CPU backend (OpenBLAS GEMMs, vectorised OpenMP kernels). A process-wide instance.
ops::Backend& cpu_backend();
// Bytes the CPU flash (or efficient) kernel allocates for one forward of this spec.
std::int64_t fused_workspace_bytes(const AttentionSpec& spec, bool flash);
}  // namespace attnprof::cpu
