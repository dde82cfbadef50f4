// `flash`: the FlashAttention-2-class forward (kernel body in attention_kernel.cuh).
//
// Tiling (FlashAttention-2's): 128 query rows per CTA, 4 warps × 32 rows (two m16 tiles per warp:
// each K/V ldmatrix.x4 feeds 4 MMAs), 128-key K/V tiles at D=64 and 64-key at D=128; 2 CTAs per SM
// (255 registers). K/V double-buffered through shared memory with
// cp.async (one __syncthreads per key tile, the next tile's copies issued before this tile's
// Q·Kᵀ); ldmatrix (.trans for V); P kept in registers as the A operand of P·V; causal tiles past
// the diagonal skipped, only tiles crossing it masked; CTAs in grouped longest-first order
// (BlockSchedule: heads in groups whose K/V fit 16 MiB of L2, the longest query blocks of the
// whole group first); lazy rescaling of O (only when a row max grows by > 2^8).
// Shared memory: Q 128·D·2 + 2 stages × (K + V) N·D·2 (+ 16 B of CTA coordinates) = 80 KiB
// (D=64), 96 KiB (D=128). Other head dims: the next larger of these two, or of the D 32, 96, 192
// and 256 tilings shared with efficient (attention_shared_dims.cu).
// FLOPs: 4·B·H·Sq·Sk·D (halved for causal). Bytes: 2·(2·B·H·Sq·D + 2·B·Hkv·Sk·D) for bf16/fp16;
// no S² term: O(S·D) memory traffic and no extra memory.
#include "cuda/attention_launch.cuh"
#include "cuda/hopper/flash_hopper.h"

namespace attnprof::cuda {
namespace {

template <int D, int M, int N, int W>
using Flash = attention::Traits<D, M, N, W, /*kPipelined=*/true>;

// FlashAttention-2's tilings, 4 warps × 32 rows (ptxas sm_90a, bf16 and fp16 alike: 255
// registers/thread, 0 bytes spilled, 2 CTAs/SM): D 64 on 128×128, D 128 on 128×64. The other
// tilings measured (docs/history.md) were all slower.
using FlashD64 = Flash<64, 128, 128, 4>;
using FlashD128 = Flash<128, 128, 64, 4>;

}  // namespace

void launch_flash_attention(const FusedAttentionArgs& args, cudaStream_t stream) {
  // sm_90 devices run the wgmma + TMA kernel (hopper/flash_dispatch.cu) unless the overrides ask
  // for sm80 or the head dim is one it does not take (an explicit sm90 schedule is refused there).
  if (const auto kernel = hopper::flash_schedule_choice();
      kernel != hopper::FlashSchedule::sm80 &&
      (hopper::flash_sm90_takes_head_dim(args.head_dim) || kernel != hopper::FlashSchedule::automatic)) {
    hopper::launch_flash_attention_sm90(args, stream, kernel);
    return;
  }
  switch (attention::kernel_head_dim(args)) {
    case 64:
      return attention::launch_dtype<FlashD64>(args, stream);
    case 128:
      return attention::launch_dtype<FlashD128>(args, stream);
    default:
      return attention::launch_shared_dims(args, stream);
  }
}

}  // namespace attnprof::cuda
