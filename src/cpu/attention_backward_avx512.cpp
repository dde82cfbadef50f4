// The FlashAttention-2 backward on AVX-512, fp32 compute (fp32 inputs, and bf16/fp16 inputs
// converted to fp32 tiles while packing). Compiled with AVX-512 flags; reached only through
// attention_backward() when kernel_isa() allows it. Tiling, FLOPs and bytes:
// attention_backward_tiles.h; the micro-kernel (6 rows × 64 columns, A row- or column-major):
// microkernel_fp32_avx512.h, the forward's.
//
// Speed (Zen 5 development machine under a load of 7–9, fp32, 1x4x1024x64 causal): 86–90 GFLOP/s
// per CPU-second on one thread, what the forward gave in the same minutes; on 2 threads 0.60–0.73×
// the OpenBLAS sgemm rate of the same run by wall clock (bench_cpu_backward, bench/RESULTS.md).
#include "cpu/attention_backward_tiles.h"
#include "cpu/microkernel_fp32_avx512.h"

namespace attnprof::cpu {
namespace detail {
void attention_backward_avx512(const BackwardProblem& p, const BackwardTiles& t, void* shared, void* scratch, int threads) {
  BackwardDriver<BackwardPolicy<avx512::kRowKernels, &tile_fp32_any>>(p, t, threads).run(shared, scratch, threads);
}
}  // namespace detail
}  // namespace attnprof::cpu
