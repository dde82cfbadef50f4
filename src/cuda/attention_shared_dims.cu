// The D 32, 96, 192 and 256 specialisations of attention_forward_kernel (attention_kernel.cuh),
// one tiling per head dim shared by `efficient` and flash's sm80 path (8 instantiations: 4 dims ×
// bf16/fp16). Head dims that are multiples of 8 between them run on the next larger one with the
// columns past the head dim zero-filled (8..24 on 32, 72..88 on 96, 136..184 on 192, 200..248 on
// 256); see ops/fused_head_dim.h.
//
// Tilings (FlashAttention-2's for sm80), 4 warps each:
//   D 32:  128×128, 32 rows per warp, K/V double-buffered — Q 8 KiB + 2 × (K + V) 16 KiB = 40 KiB.
//   D 96:  128×64, 32 rows per warp, K/V double-buffered — Q 24 KiB + 2 × (K + V) 24 KiB = 72 KiB.
//   D 192: 64×64, 16 rows per warp, one K/V stage — Q 24 KiB + K + V 48 KiB = 72 KiB, 3 CTAs/SM
//          on sm_90a (registers capped at 170 by the launch bound: 168, no spills; 175 uncapped).
//   D 256: 64×64, 16 rows per warp, one K/V stage — Q 32 KiB + K + V 64 KiB = 96 KiB, 2 CTAs/SM
//          (double-buffered it would be 160 KiB and 1 CTA/SM; FlashAttention-2 keeps 96 KiB too).
// Registers (ptxas sm_90a / sm_80, bf16 and fp16 alike, 0 bytes spilled): D 32 230 / 229, D 96
// 244 / 240, D 192 168 / 174, D 256 251 / 251. None of these tilings is measured on a GPU yet.
// FLOPs: 4·B·H·Sq·Sk·D (halved for causal), D the problem's. Bytes: 2·(2·B·H·Sq·D + 2·B·Hkv·Sk·D).
#include "cuda/attention_launch.cuh"

namespace attnprof::cuda::attention {
namespace {

using SharedD32 = Traits<32, 128, 128, 4, /*kPipelined=*/true>;
using SharedD96 = Traits<96, 128, 64, 4, /*kPipelined=*/true>;
using SharedD192 = Traits<192, 64, 64, 4, /*kPipelined=*/false, /*kQInRegisters=*/false, /*kMinBlocksPerSm=*/3>;
using SharedD256 = Traits<256, 64, 64, 4, /*kPipelined=*/false>;

}  // namespace

void launch_shared_dims(const FusedAttentionArgs& args, cudaStream_t stream) {
  switch (kernel_head_dim(args)) {
    case 32:
      return launch_dtype<SharedD32>(args, stream);
    case 96:
      return launch_dtype<SharedD96>(args, stream);
    case 192:
      return launch_dtype<SharedD192>(args, stream);
    case 256:
      return launch_dtype<SharedD256>(args, stream);
    default:
      throw Error("launch_shared_dims: head_dim " + std::to_string(args.head_dim) +
                  " runs on a kernel of its variant's own (D 64 or 128)");
  }
}

}  // namespace attnprof::cuda::attention
