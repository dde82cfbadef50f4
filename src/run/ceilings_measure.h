#pragma once
// Measuring the ceilings of report/ceilings.h. The CPU's are measured here (OpenBLAS sgemm,
// memcpy); a device backend installs a probe for its own (cuBLASLt GEMM and a device-to-device
// copy), or is measured through its ops::Backend.
#include <attnprof/dtype.h>

#include <cstdint>

#include "report/ceilings.h"

namespace attnprof {

using CeilingProbe = report::Ceilings (*)();
// A device backend registers how to measure its ceilings (the CUDA one at start-up).
void install_ceiling_probe(Device device, CeilingProbe probe);

// The device's ceilings, kept for the process: read from this machine's cache file
// (report/ceilings_cache.h) when it holds a valid measurement, else measured now (noted on stderr)
// and written there. A device without a probe or backend gets unmeasured ceilings (zeros) naming why.
const report::Ceilings& measured_ceilings(Device device);
// Measures the device's ceilings again now, whatever the cache holds, and rewrites the cache
// (`attnprof devices --remeasure`).
const report::Ceilings& remeasure_ceilings(Device device);

// A device's ceilings through its ops::Backend alone (what measured_ceilings uses for a device
// with a backend and no probe): a bf16 GEMM of gemm_n³ on the tensor cores, an fp32 FFMA GEMM of
// (gemm_n/2)³, each run at least 5 times and for at least 0.2 s and checked on one entry, and a
// copy of copy_bytes run at least 5 times and for 0.1 s (read + write). Throws UsageError
// without a backend.
report::Ceilings measure_backend_ceilings(Device device, std::int64_t gemm_n = 8192, std::int64_t copy_bytes = 1LL << 30);

// OpenBLAS sgemm and oneDNN's bf16 matmul (2048³, each run at least 5 times and for at least
// 0.2 s) on omp_get_max_threads() threads, and a memcpy of 128 MiB (5 times, at least 0.1 s).
report::Ceilings measure_cpu_ceilings();

}  // namespace attnprof
