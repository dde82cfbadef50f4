#include "cpu/fused_attention.h"

namespace attnprof::cpu {

Isa fused_isa(DType dtype, Isa isa) {
  if (isa == Isa::portable) return Isa::portable;
  if (dtype == DType::bf16 && isa >= Isa::avx512_bf16) return isa;
  return Isa::avx512;
}

FusedWorkspace fused_workspace(const FusedProblem& problem, const TileConfig& config, Isa isa, int threads) {
  // The portable build has the fp32 build's layout (fp32 packs, probabilities over the scores).
  switch (fused_isa(problem.dtype, isa)) {
    case Isa::avx512_amx: return detail::workspace_amx(problem, config, threads);
    case Isa::avx512_bf16: return detail::workspace_bf16(problem, config, threads);
    default: return detail::workspace_fp32(problem, config, threads);
  }
}

void fused_attention(const FusedProblem& problem, const TileConfig& config, Isa isa, void* prepack, void* scratch,
                     int threads) {
  switch (fused_isa(problem.dtype, isa)) {
    case Isa::avx512_amx: detail::fused_attention_amx(problem, config, prepack, scratch, threads); return;
    case Isa::avx512_bf16: detail::fused_attention_avx512_bf16(problem, config, prepack, scratch, threads); return;
    case Isa::avx512: detail::fused_attention_avx512_fp32(problem, config, prepack, scratch, threads); return;
    case Isa::portable: detail::fused_attention_portable(problem, config, prepack, scratch, threads); return;
  }
}

}  // namespace attnprof::cpu
