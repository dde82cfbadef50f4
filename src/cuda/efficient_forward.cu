// `efficient`: the memory-efficient forward in the xformers/CUTLASS style (kernel body shared with
// flash in attention_kernel.cuh, different traits).
//
// Tiling: 64×64 tiles — 64 query rows per CTA, 4 warps × 16 rows, 64-key K/V tiles through one
// shared-memory stage (load, wait, compute: no double buffering), accumulators in registers,
// mma.sync m16n8k16 with fp32 accumulation, online softmax. sm80 and later.
// Shared memory: Q 64·D·2 + (K + V) 64·D·2 = 24 KiB (D=64), 48 KiB (D=128).
// Registers (ptxas sm_90a): D=64 124 (4 CTAs/SM), D=128 138 (3), no spills.
// FLOPs: 4·B·H·Sq·Sk·D (halved for causal). Bytes: 2·(2·B·H·Sq·D + 2·B·Hkv·Sk·D); O(S·D).
#include "cuda/attention_launch.cuh"

namespace attnprof::cuda {
namespace {
template <int D>
using EfficientTraits = attention::Traits<D, /*kBlockM=*/64, /*kBlockN=*/64, /*kWarps=*/4, /*kPipelined=*/false>;
}  // namespace

// Head dims 40..64 and 104..128 (multiples of 8) on these traits; the others on the D 32, 96, 192
// and 256 tilings shared with flash (attention_shared_dims.cu).
void launch_efficient_attention(const FusedAttentionArgs& args, cudaStream_t stream) {
  switch (attention::kernel_head_dim(args)) {
    case 64:
      return attention::launch_dtype<EfficientTraits<64>>(args, stream);
    case 128:
      return attention::launch_dtype<EfficientTraits<128>>(args, stream);
    default:
      return attention::launch_shared_dims(args, stream);
  }
}

}  // namespace attnprof::cuda
