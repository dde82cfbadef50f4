#pragma once
#include "ops/backend.h"

namespace attnprof::cpu {
// The CPU backend (OpenBLAS/oneDNN GEMMs, vectorised OpenMP kernels). A process-wide instance.
ops::Backend& cpu_backend();
}  // namespace attnprof::cpu
