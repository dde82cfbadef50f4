// The FlashAttention-2 backward with portable loops (any x86-64; used when AVX-512 is missing or
// --cpu-isa portable). Tiling, FLOPs and bytes: attention_backward_tiles.h; the micro-kernel:
// microkernel_portable.h.
#include "cpu/attention_backward_tiles.h"
#include "cpu/microkernel_portable.h"

namespace attnprof::cpu {
namespace detail {
void attention_backward_portable(const BackwardProblem& p, const BackwardTiles& t, void* shared, void* scratch, int threads) {
  BackwardDriver<BackwardPolicy<portable::kRowKernels, &tile_portable>>(p, t, threads).run(shared, scratch, threads);
}
}  // namespace detail
}  // namespace attnprof::cpu
