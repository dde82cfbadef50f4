#pragma once
// Kernel overrides (attnprof/kernel_overrides.h) in force for one scope, then what was in force
// before: so what a run sizes and times sees its own overrides, and a later caller (a ceilings
// measurement after a `--cpu-isa portable` run, the next caller of the library) the automatic choice.
#include <attnprof/kernel_overrides.h>

namespace attnprof {

class ScopedKernelOverrides {
 public:
  explicit ScopedKernelOverrides(const KernelOverrides& overrides) : before_(kernel_overrides()) {
    set_kernel_overrides(overrides);
  }
  ~ScopedKernelOverrides() {
    try {
      set_kernel_overrides(before_);
    } catch (...) {  // before_ was in force, so it validates; nothing may leave a destructor
    }
  }
  ScopedKernelOverrides(const ScopedKernelOverrides&) = delete;
  ScopedKernelOverrides& operator=(const ScopedKernelOverrides&) = delete;

 private:
  KernelOverrides before_;
};

}  // namespace attnprof
