// `flash`: the FlashAttention-2-class forward (kernel body in attention_kernel.cuh).
//
// Tiling: 128 query rows per CTA; D=64: 4 warps × 32 rows, 64-key K/V tiles; D=128: 8 warps × 16
// rows, 128-key K/V tiles. K/V double-buffered through shared memory with cp.async; ldmatrix (.trans
// for V); P kept in registers as the A operand of P·V; causal tiles above the diagonal skipped,
// only tiles crossing it masked, longest-first grid.
// Shared memory: Q 128·D·2 + 2 stages × (K + V) kBlockN·D·2 = 48 KiB (D=64), 160 KiB (D=128).
// FLOPs: 4·B·H·Sq·Sk·D (halved for causal). Bytes: 2·(2·B·H·Sq·D + 2·B·Hkv·Sk·D) for bf16/fp16;
// no S² term: O(S·D) memory traffic and no extra memory.
// Versions (H200, bf16 causal; see bench/RESULTS.md for every measured row):
//   v1 128×64 tiles (4 warps D=64, 8 warps D=128), exp2f: 8x16x1024x64 0.111 ms (155 TFLOP/s; FA2 0.095).
//   v2 ex2.approx (MUFU.EX2) instead of exp2f: 0.104 ms (165 TFLOP/s) at 8x16x1024x64, 230 at
//      4x16x4096x64, 218 at 4x16x4096x128, 243 at 1x16x16384x128, 147 at 16x32x512x128.
//   v3 D=128 on 128×128 tiles (v2 run's config 3): 253 / 285 / 164 TFLOP/s at the D=128 anchors
//      (FA2 292 / 320 / 151 by the anchors; 0.82-0.88x FA2 in the same run, bench/RESULTS.md).
#include <cstdlib>

#include "cuda/attention_launch.cuh"
#include "cuda/hopper/flash_hopper.h"

namespace attnprof::cuda {
namespace {

template <int D, int M, int N, int W, bool QInRegisters = false>
using Flash = attention::Traits<D, M, N, W, /*kPipelined=*/true, QInRegisters>;

// Tile configurations (ptxas sm_90a registers/thread; measured against FA2 on the H200 in one run,
// 2026-11-30, ratio FA2 time / ours at 8x16x1024x64, 4x16x4096x64 | 4x16x4096x128, 1x16x16384x128, 16x32x512x128):
//   D=64  default 128×64, 4 warps × 32 rows (222): 0.92, 0.87.
//         1: 64×64, 4 warps (126): 0.93, 0.80.
//         2: 128×64, 8 warps, Q in registers (138): correct and sanitizer-clean, not yet timed.
//         rejected: 128×64, 8 warps (126): 0.87, 0.81; 128×128, 8 warps (170): 0.83, 0.78;
//                   128×128, 4 warps: 255 registers and 8 bytes spilled.
//   D=128 default 128×128, 8 warps × 16 rows (236): 0.82, 0.87, 0.88.
//         1: 128×64, 8 warps (170): 0.70, 0.74, 0.79.
//         2: 128×128, 8 warps, Q in registers (254): correct and sanitizer-clean, not yet timed.
//         rejected: 128×32, 8 warps (138): 0.54, 0.57, 0.64; 64×64, 4 warps (168): 0.71, 0.74, 0.88;
//                   128×64, 4 warps: 255 registers and 72 bytes spilled.
// ATTNPROF_FLASH_CONFIG=1|2 picks an alternative (a tuning knob for bench/gpu_bench `flash@k`).
int tuning_config() {
  const char* text = std::getenv("ATTNPROF_FLASH_CONFIG");
  return text == nullptr ? 0 : std::atoi(text);
}

template <class T>
void launch_d64(const FusedAttentionArgs& a, cudaStream_t s, int config) {
  switch (config) {
    case 1: attention::launch_typed<Flash<64, 64, 64, 4>, T>(a, s); return;
    case 2: attention::launch_typed<Flash<64, 128, 64, 8, true>, T>(a, s); return;
    default: attention::launch_typed<Flash<64, 128, 64, 4>, T>(a, s); return;
  }
}

template <class T>
void launch_d128(const FusedAttentionArgs& a, cudaStream_t s, int config) {
  switch (config) {
    case 1: attention::launch_typed<Flash<128, 128, 64, 8>, T>(a, s); return;
    case 2: attention::launch_typed<Flash<128, 128, 128, 8, true>, T>(a, s); return;
    default: attention::launch_typed<Flash<128, 128, 128, 8>, T>(a, s); return;
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
    throw UsageError("--dtype " + std::string(dtype_name(args.dtype)) + ": the fused GPU kernels take bf16 or fp16");
  const int config = tuning_config();
  const bool bf16 = args.dtype == DType::bf16;
  if (args.head_dim == 64) {
    bf16 ? launch_d64<__nv_bfloat16>(args, stream, config) : launch_d64<__half>(args, stream, config);
  } else if (args.head_dim == 128) {
    bf16 ? launch_d128<__nv_bfloat16>(args, stream, config) : launch_d128<__half>(args, stream, config);
  } else {
    throw UsageError("--head-dim " + std::to_string(args.head_dim) + ": the fused GPU kernels take 64 or 128");
  }
}

}  // namespace attnprof::cuda
