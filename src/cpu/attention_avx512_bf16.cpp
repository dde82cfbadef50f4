// Fused attention for bf16 inputs on CPUs with AVX512_BF16: both GEMMs on vdpbf16ps, which sums
// a pair of bf16 products into each fp32 lane (2× the fp32 FMA rate on Zen 4 and Zen 5). Q and K stay bf16;
// P is rounded to bf16 for the PV product while the row sums use the unrounded fp32 values, and
// m, l and O are fp32 throughout (as PyTorch's CPU flash kernel does). Compiled with AVX-512 and
// AVX512_BF16 flags. Tiling, FLOPs and bytes: attention_tiles.h.
//
// Policy: policy_bf16_avx512.h (shared with the AMX path, attention_amx.cpp); micro-kernel:
// microkernel_bf16_avx512.h (shared with the bf16 GEMM).
//
// Speed (Zen 5 development machine, 2 threads, causal, GFLOP/s per CPU-second, D=64 / D=128):
// bf16 729 / 773, 73–78% of the 2-core vdpbf16ps peak 993. The earlier versions: docs/history.md.
#include "cpu/policy_bf16_avx512.h"

namespace attnprof::cpu {

namespace detail {
void fused_attention_avx512_bf16(const FusedProblem& p, const TileConfig& c, void* prepack, void* scratch,
                                 int threads) {
  TileDriver<PolicyAvx512Bf16>(p, c, threads).run(prepack, scratch, threads);
}
FusedWorkspace workspace_bf16(const FusedProblem& p, const TileConfig& c, int threads) {
  return TileDriver<PolicyAvx512Bf16>(p, c, threads).workspace();
}
}  // namespace detail

}  // namespace attnprof::cpu
