#pragma once
#include <attnprof/attention.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ops/backend.h"

namespace attnprof::cpu {
// The CPU backend (OpenBLAS GEMMs, vectorised OpenMP kernels). A process-wide instance.
ops::Backend& cpu_backend();
// Bytes the CPU flash (or efficient) kernel allocates for one forward of this spec.
std::int64_t fused_workspace_bytes(const AttentionSpec& spec, bool flash);
// Bytes its backward allocates: the per-row Δ and scaled LSE, and each thread's tiles and fp32 dQ
// of one (b, kv head) group.
std::int64_t fused_backward_workspace_bytes(const AttentionSpec& spec, bool flash);
// Test seam: while a log is installed, every CPU backend call (one piece of work) appends its
// kernel name, so tests can check a variant's sequence without the profiler. Calls come from the
// thread running the forward; install and read the log from that thread. nullptr uninstalls.
void set_kernel_log(std::vector<std::string>* log);
}  // namespace attnprof::cpu
