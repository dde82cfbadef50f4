// `flash`: the FlashAttention-2-class forward (kernel body in attention_kernel.cuh).
//
// Tiling (defaults): 128 query rows per CTA, 4 warps × 32 rows (two m16 tiles per warp: each K/V
// ldmatrix.x4 feeds 4 MMAs), 64-key K/V tiles; D=64 at 3 CTAs per SM (168 registers), D=128 at 2
// (255 registers, as FlashAttention-2 on sm90). K/V double-buffered through shared memory with
// cp.async (one __syncthreads per key tile, the next tile's copies issued before this tile's
// Q·Kᵀ); ldmatrix (.trans for V); P kept in registers as the A operand of P·V; causal tiles past
// the diagonal skipped, only tiles crossing it masked; CTAs in grouped longest-first order
// (BlockSchedule: heads in groups whose K/V fit 16 MiB of L2, the longest query blocks of the
// whole group first); lazy rescaling of O (only when a row max grows by > 2^8).
// Shared memory: Q 128·D·2 + 2 stages × (K + V) 64·D·2 (+ 16 B of CTA coordinates) = 48 KiB
// (D=64), 96 KiB (D=128).
// FLOPs: 4·B·H·Sq·Sk·D (halved for causal). Bytes: 2·(2·B·H·Sq·D + 2·B·Hkv·Sk·D) for bf16/fp16;
// no S² term: O(S·D) memory traffic and no extra memory.
// Versions (H200, bf16 causal; see bench/RESULTS.md for every measured row):
//   v1 128×64 tiles (4 warps D=64, 8 warps D=128), exp2f: 8x16x1024x64 0.111 ms (155 TFLOP/s; FA2 0.095).
//   v2 ex2.approx (MUFU.EX2) instead of exp2f: 0.104 ms (165 TFLOP/s) at 8x16x1024x64, 230 at
//      4x16x4096x64, 218 at 4x16x4096x128, 243 at 1x16x16384x128, 147 at 16x32x512x128.
//   v3 D=128 on 128×128 tiles (v2 run's config 3): 253 / 285 / 164 TFLOP/s at the D=128 anchors
//      (FA2 292 / 320 / 151 by the anchors; 0.82-0.88x FA2 in the same run, bench/RESULTS.md).
//   v4 the 4-warp × 32-row tilings FA2 uses, now without spills (v3 spilled 8 and 72 bytes there:
//      ptxas kept per-copy 64-bit pointers and per-k-step ldmatrix addresses live across the key
//      loop; now one register per operand, XOR-stepped, rebuilt per tile); 8-warp 128×128 D=128
//      236 → 174 registers; lazy rescaling; the first Q·Kᵀ k-step with C = 0; warps skip the
//      diagonal tiles none of their rows sees; grouped longest-first CTA order (v3 went head by
//      head, longest first within a head, like FA2's grid: a list-scheduling model puts that
//      12-27% over the ideal makespan at the anchors, the grouped order 0-3%); causal_offset
//      (bottom-right causal, fully masked rows). D=64 on FA2's 128×128 (measured best), D=128 on
//      FA2's 128×64: 1.29 / 1.22 / 1.17 / 1.19 / 1.22x FA2's time at the five anchors (the D=64 rows
//      from the same run's 128×128 configuration, before it became the default; sm80 path forced on
//      the H200 with ATTNPROF_FLASH_KERNEL=sm80).
#include <cstdlib>

#include "cuda/attention_launch.cuh"
#include "cuda/hopper/flash_hopper.h"

namespace attnprof::cuda {
namespace {

template <int D, int M, int N, int W, bool QInRegisters = false, int MinBlocksPerSm = 0>
using Flash = attention::Traits<D, M, N, W, /*kPipelined=*/true, QInRegisters, MinBlocksPerSm>;

// Tile configurations (ATTNPROF_FLASH_CONFIG=k, a tuning knob for bench/gpu_bench `flash@k`; ptxas
// sm_90a registers/thread, bf16 and fp16 alike, 0 bytes spilled everywhere since v4):
//   D=64  default 128×128, 4 warps × 32 rows (FlashAttention-2's choice): 255, 2 CTAs/SM.
//         1: 128×64, 4 warps × 32 rows, __launch_bounds__ min 3 CTAs/SM (sm_90 only): 168, 3 CTAs/SM
//            (the v4 guess: 12 warps to hide the softmax; measured 10-20% slower than 128×128).
//         2: 128×64, 4 warps × 32 rows, Q fragments in registers: 230, 2 CTAs/SM.
//         3: 64×64, 4 warps × 16 rows: 101, 4 CTAs/SM.
//         4: 256×64, 8 warps × 32 rows: 208, 1 CTA/SM.
//   D=128 default 128×64, 4 warps × 32 rows (FlashAttention-2's choice): 255, 2 CTAs/SM.
//         1: 128×128, 8 warps × 16 rows (the v3 default): 174, 1 CTA/SM.
//         2: 128×32, 4 warps × 32 rows: 236, 2 CTAs/SM.
//         3: 256×64, 8 warps × 32 rows: 255, 1 CTA/SM.
//         4: 128×128, 8 warps × 16 rows, Q fragments in registers: 229, 1 CTA/SM.
//   v4 speeds (H200 run of 2026-11-30, ms at 8x16x1024x64, 4x16x4096x64 | 4x16x4096x128,
//   1x16x16384x128, 16x32x512x128; FA2 0.096, 0.523 | 0.894, 3.399, 0.187 in the same run):
//     D=64  128×128: 0.074, 0.430 (the default since); 128×64/3 CTAs: 0.082, 0.516; Q in registers:
//           0.082, 0.486; 64×64: 0.082, 0.521; 256×64: 0.097, 0.574.
//     D=128 128×64 (default): 0.763, 2.857, 0.153; 128×128/8 warps: 1.022, 3.835, 0.204; 128×32:
//           0.875, 3.337, 0.168; 256×64: 0.854, 3.123, 0.177; 128×128/Q in registers: 0.848, 3.154, 0.180.
// Measured before v4 (2026-11-30, ratio FA2 time / ours): D=64 128×64/4 warps 0.92, 0.87; 64×64
// 0.93, 0.80; 128×64/8 warps 0.87, 0.81; 128×128/8 warps 0.83, 0.78. D=128 128×128/8 warps 0.82,
// 0.87, 0.88; 128×64/8 warps 0.70, 0.74, 0.79; 128×32/8 warps 0.54, 0.57, 0.64; 64×64 0.71, 0.74,
// 0.88. 128×128/4 warps (D=64) and 128×64/4 warps (D=128) spilled then (8 and 72 bytes).
int tuning_config() {
  const char* text = std::getenv("ATTNPROF_FLASH_CONFIG");
  return text == nullptr ? 0 : std::atoi(text);
}

template <class T>
void launch_d64(const FusedAttentionArgs& a, cudaStream_t s, int config) {
  switch (config) {
    case 1: attention::launch_typed<Flash<64, 128, 64, 4, false, 3>, T>(a, s); return;
    case 2: attention::launch_typed<Flash<64, 128, 64, 4, true>, T>(a, s); return;
    case 3: attention::launch_typed<Flash<64, 64, 64, 4>, T>(a, s); return;
    case 4: attention::launch_typed<Flash<64, 256, 64, 8>, T>(a, s); return;
    default: attention::launch_typed<Flash<64, 128, 128, 4>, T>(a, s); return;
  }
}

template <class T>
void launch_d128(const FusedAttentionArgs& a, cudaStream_t s, int config) {
  switch (config) {
    case 1: attention::launch_typed<Flash<128, 128, 128, 8>, T>(a, s); return;
    case 2: attention::launch_typed<Flash<128, 128, 32, 4>, T>(a, s); return;
    case 3: attention::launch_typed<Flash<128, 256, 64, 8>, T>(a, s); return;
    case 4: attention::launch_typed<Flash<128, 128, 128, 8, true>, T>(a, s); return;
    default: attention::launch_typed<Flash<128, 128, 64, 4>, T>(a, s); return;
  }
}

}  // namespace

void launch_flash_attention(const FusedAttentionArgs& args, cudaStream_t stream) {
  // sm_90 devices run the wgmma + TMA kernel (hopper/flash_hopper.cu) unless ATTNPROF_FLASH_KERNEL=sm80.
  if (const auto kernel = hopper::flash_kernel_choice(); kernel != hopper::FlashKernel::sm80) {
    hopper::launch_flash_attention_sm90(args, stream, kernel);
    return;
  }
  if (args.dtype != DType::bf16 && args.dtype != DType::fp16)
    throw UsageError("dtype " + std::string(dtype_name(args.dtype)) + ": the fused GPU kernels take bf16 or fp16");
  const int config = tuning_config();
  const bool bf16 = args.dtype == DType::bf16;
  if (args.head_dim == 64) {
    bf16 ? launch_d64<__nv_bfloat16>(args, stream, config) : launch_d64<__half>(args, stream, config);
  } else if (args.head_dim == 128) {
    bf16 ? launch_d128<__nv_bfloat16>(args, stream, config) : launch_d128<__half>(args, stream, config);
  } else {
    throw UsageError("head_dim " + std::to_string(args.head_dim) + ": the fused GPU kernels take 64 or 128");
  }
}

}  // namespace attnprof::cuda
