#pragma once
// NVTX ranges, so Nsight Systems users see attnprof's op names. Header-only NVTX v3: when no tool
// is attached, a push/pop is a call through a null-initialised function pointer.
#include <nvtx3/nvToolsExt.h>

namespace attnprof::cuda {
class NvtxRange {
 public:
  explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};
}  // namespace attnprof::cuda
