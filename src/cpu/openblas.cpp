// OpenBLAS is opened with dlopen on first use, not linked.
//
// OpenBLAS's pthreads build (Debian's default) starts a server thread per core, less one, in its
// constructor, and allocates their buffers. Linked, that happens before main: every invocation pays
// for it (`--help` and `inspect` included, which never multiply a matrix), and on a many-core
// machine under an address-space limit (`ulimit -v`) the thread creations fail and OpenBLAS waits
// for threads that never start, so attnprof hangs before its memory preflight can say why. Opened
// here, with OPENBLAS_NUM_THREADS=1 in the environment while the constructor runs (unless the user
// set it), OpenBLAS starts with no extra thread; measuring the sgemm ceiling raises the count with
// openblas_set_num_threads, which creates the threads then. setenv is not safe against a getenv in
// another thread: the first use comes from the thread that drives a run, before its parallel loops
// (a program embedding libattnprof that reads the environment from other threads should make a
// first CPU GEMM, or `attnprof::cpu::openblas()`, before it starts them).
#include "cpu/openblas.h"

#include <attnprof/error.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>

namespace attnprof::cpu {
namespace {

template <typename Fn>
void bind(void* handle, const char* name, Fn* slot) {
  void* symbol = ::dlsym(handle, name);
  if (symbol == nullptr) {
    throw Error(fmt::format("OpenBLAS ({}) lacks {}: a BLAS other than OpenBLAS is installed under its name",
                            ATTNPROF_OPENBLAS_SONAME, name));
  }
  *slot = reinterpret_cast<Fn>(symbol);
}

OpenBlas open_openblas() {
  constexpr const char* kThreads = "OPENBLAS_NUM_THREADS";
  // Unset or empty (OpenBLAS reads an empty value as unset: every core): one thread while it loads.
  const char* users = std::getenv(kThreads);
  const bool was_empty = users != nullptr && *users == '\0';
  const bool set_here = (users == nullptr || was_empty) && ::setenv(kThreads, "1", 1) == 0;
  void* handle = ::dlopen(ATTNPROF_OPENBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
  const char* why = handle == nullptr ? ::dlerror() : nullptr;
  if (set_here) was_empty ? ::setenv(kThreads, "", 1) : ::unsetenv(kThreads);
  if (handle == nullptr) {
    throw Error(fmt::format("OpenBLAS could not be opened ({}); install libopenblas0 (scripts/install-deps.sh)",
                            why != nullptr ? why : ATTNPROF_OPENBLAS_SONAME));
  }
  OpenBlas blas;
  try {
    bind(handle, "cblas_sgemm", &blas.sgemm);
    bind(handle, "openblas_set_num_threads", &blas.set_num_threads);
    bind(handle, "openblas_get_num_threads", &blas.get_num_threads);
    bind(handle, "openblas_get_parallel", &blas.get_parallel);
    bind(handle, "openblas_get_config", &blas.get_config);
  } catch (...) {
    ::dlclose(handle);
    throw;
  }
  // An OpenMP build's openblas_set_num_threads(n) calls omp_set_num_threads(n) and would shrink
  // attnprof's own parallel regions, so only a pthreads build is set (to one thread, also when the
  // user's OPENBLAS_NUM_THREADS asked for more: sgemm runs inside attnprof's OpenMP loops).
  if (blas.get_parallel() == 1) blas.set_num_threads(1);
  return blas;
}

}  // namespace

const OpenBlas& openblas() {
  static const OpenBlas blas = open_openblas();
  return blas;
}

std::string openblas_description() {
  static const char* names[] = {"sequential", "pthreads", "OpenMP"};
  const OpenBlas& blas = openblas();
  const int parallel = blas.get_parallel();
  return fmt::format("{} ({} threading)", blas.get_config(),
                     parallel >= 0 && parallel <= 2 ? names[parallel] : "unknown");
}

}  // namespace attnprof::cpu
