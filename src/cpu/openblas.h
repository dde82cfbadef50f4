#pragma once
// OpenBLAS, opened on first use (openblas.cpp says why it is not linked).
#include <cblas.h>

#include <string>

namespace attnprof::cpu {

// The OpenBLAS entry points attnprof calls.
struct OpenBlas {
  decltype(&cblas_sgemm) sgemm = nullptr;
  decltype(&openblas_set_num_threads) set_num_threads = nullptr;
  decltype(&openblas_get_num_threads) get_num_threads = nullptr;
  decltype(&openblas_get_parallel) get_parallel = nullptr;  // 0 sequential, 1 pthreads, 2 OpenMP
  decltype(&openblas_get_config) get_config = nullptr;
};

// Opens OpenBLAS once (thread-safe) and, for a pthreads build, holds it at one thread: attnprof
// parallelises over B·H with OpenMP and calls sgemm from those threads (gemm.cpp). Throws Error
// naming the library when it cannot be opened or lacks an entry point.
const OpenBlas& openblas();

// OpenBLAS's build ("OpenBLAS 0.3.21 ... Cooperlake MAX_THREADS=64") and threading model.
std::string openblas_description();

}  // namespace attnprof::cpu
