// `efficient`: the memory-efficient forward in the xformers/CUTLASS style (kernel body shared with
// flash in attention_kernel.cuh, different traits).
//
// Tiling: 64×64 tiles — 64 query rows per CTA, 4 warps × 16 rows, 64-key K/V tiles through one
// shared-memory stage (load, wait, compute: no double buffering), accumulators in registers,
// mma.sync m16n8k16 with fp32 accumulation, online softmax. sm80 and later.
// Shared memory: Q 64·D·2 + (K + V) 64·D·2 = 24 KiB (D=64), 48 KiB (D=128).
// Registers (ptxas sm_90a, v2): D=64 124 (4 CTAs/SM), D=128 138 (3), no spills (v1: 128 with a
// 4-byte spill, 168).
// FLOPs: 4·B·H·Sq·Sk·D (halved for causal). Bytes: 2·(2·B·H·Sq·D + 2·B·Hkv·Sk·D); O(S·D).
// Versions (H200, bf16 causal, PyTorch 2.11's efficient backend in the same run, 2026-11-30):
//   v1 this file (ex2.approx): 158 / 204 / 232 / 243 / 176 TFLOP/s at 8x16x1024x64, 4x16x4096x64,
//      4x16x4096x128, 1x16x16384x128, 16x32x512x128 = 1.66 / 1.75 / 1.44 / 1.43 / 1.47x PyTorch's.
//   v2 the shared body's v4 (flash_forward.cu): no spills, lazy rescaling, grouped longest-first
//      CTA order, causal_offset.
//      213 / 268 / 268 / 278 / 197 TFLOP/s = 2.24 / 2.28 / 1.66 / 1.66 / 1.65x PyTorch's efficient
//      backend in the same run.
#include "cuda/attention_launch.cuh"

namespace attnprof::cuda {
namespace {
template <int D>
using EfficientTraits = attention::Traits<D, /*kBlockM=*/64, /*kBlockN=*/64, /*kWarps=*/4, /*kPipelined=*/false>;
}  // namespace

void launch_efficient_attention(const FusedAttentionArgs& args, cudaStream_t stream) {
  attention::launch<EfficientTraits>(args, stream);
}

}  // namespace attnprof::cuda
