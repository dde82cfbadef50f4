// `flash`: the FlashAttention-2-class forward (kernel body in attention_kernel.cuh).
//
// Tiling: 128 query rows per CTA, 4 warps × 32 rows (D=64) or 8 warps × 16 rows (D=128), 64-key
// K/V tiles double-buffered through shared memory with cp.async; ldmatrix (.trans for V); P kept in
// registers as the A operand of P·V; causal tiles above the diagonal skipped, longest-first grid.
// Shared memory: Q 128·D·2 + 2 stages × (K + V) 64·D·2 = 48 KiB (D=64), 96 KiB (D=128).
// FLOPs: 4·B·H·Sq·Sk·D (halved for causal). Bytes: 2·(2·B·H·Sq·D + 2·B·Hkv·Sk·D) for bf16/fp16;
// no S² term: O(S·D) memory traffic and no extra memory.
// Versions (H200, bf16 causal, TFLOP/s at 8x16x1024x64 / 4x16x4096x64 / 4x16x4096x128 / 1x16x16384x128 / 16x32x512x128):
//   v1 this file: see bench/RESULTS.md (GPU section) for the measured row of this version.
#include "cuda/attention_launch.cuh"

namespace attnprof::cuda {
namespace {
// D=64: 4 warps × 32 rows (2 m-tiles share each K/V fragment read). D=128: 8 warps × 16 rows —
// 4 warps × 32 rows needed 255 registers and spilled 72 bytes (ptxas, sm_90a).
template <int D>
using FlashTraits = attention::Traits<D, /*kBlockM=*/128, /*kBlockN=*/64, /*kWarps=*/(D <= 64 ? 4 : 8),
                                      /*kPipelined=*/true>;
}  // namespace

void launch_flash_attention(const FusedAttentionArgs& args, cudaStream_t stream) {
  attention::launch<FlashTraits>(args, stream);
}

}  // namespace attnprof::cuda
