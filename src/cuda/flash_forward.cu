// `flash`: the FlashAttention-2-class forward (kernel body in attention_kernel.cuh).
//
// Tiling: 128 query rows per CTA, 4 warps × 32 rows (D=64) or 8 warps × 16 rows (D=128), 64-key
// K/V tiles double-buffered through shared memory with cp.async; ldmatrix (.trans for V); P kept in
// registers as the A operand of P·V; causal tiles above the diagonal skipped, longest-first grid.
// Shared memory: Q 128·D·2 + 2 stages × (K + V) 64·D·2 = 48 KiB (D=64), 96 KiB (D=128).
// FLOPs: 4·B·H·Sq·Sk·D (halved for causal). Bytes: 2·(2·B·H·Sq·D + 2·B·Hkv·Sk·D) for bf16/fp16;
// no S² term: O(S·D) memory traffic and no extra memory.
// Versions (H200, bf16 causal; see bench/RESULTS.md for every measured row):
//   v1 (128×64, 4 warps for D=64): 0.111 ms at 8x16x1024x64 (155 TFLOP/s) vs FA2 0.095 ms.
//   v2 fast exp2 (MUFU.EX2 via ex2.approx.ftz) + tile configs tried side by side: see RESULTS.md.
#include <cstdlib>

#include "cuda/attention_launch.cuh"

namespace attnprof::cuda {
namespace {

template <int D, int M, int N, int W, bool QInRegisters = false>
using Flash = attention::Traits<D, M, N, W, /*kPipelined=*/true, QInRegisters>;

// Candidate tilings per head dim (ptxas, sm_90a, registers/thread, no spills unless noted):
//   D=64:  0: 128×64, 4 warps (222)   1: 128×64, 8 warps (126)   2: 1 + Q in registers (138)
//          3: 64×64, 4 warps (126)   4: 3 + Q in registers
//          rejected: 128×128, 4 warps (255 and 8 bytes spilled); 128×128, 8 warps (170): 0.83-0.88× FA2 (run 2026-11-30)
//   D=128: 0: 128×64, 8 warps (170)   1: 0 + Q in registers (178)   2: 64×64, 4 warps (168)
//          3: 128×128, 8 warps (236)   4: 3 + Q in registers (254)
//          rejected: 128×64, 4 warps (255 and 72 bytes spilled); 128×32, 8 warps (138): 0.54-0.64× FA2 (run 2026-11-30)
// ATTNPROF_FLASH_CONFIG picks one (a tuning knob for bench/gpu_bench; default 0).
int tuning_config() {
  const char* text = std::getenv("ATTNPROF_FLASH_CONFIG");
  return text == nullptr ? 0 : std::atoi(text);
}

template <class T>
void launch_d64(const FusedAttentionArgs& a, cudaStream_t s, int config) {
  switch (config) {
    case 1: attention::launch_typed<Flash<64, 128, 64, 8>, T>(a, s); return;
    case 2: attention::launch_typed<Flash<64, 128, 64, 8, true>, T>(a, s); return;
    case 3: attention::launch_typed<Flash<64, 64, 64, 4>, T>(a, s); return;
    case 4: attention::launch_typed<Flash<64, 64, 64, 4, true>, T>(a, s); return;
    default: attention::launch_typed<Flash<64, 128, 64, 4>, T>(a, s); return;
  }
}

template <class T>
void launch_d128(const FusedAttentionArgs& a, cudaStream_t s, int config) {
  switch (config) {
    case 1: attention::launch_typed<Flash<128, 128, 64, 8, true>, T>(a, s); return;
    case 2: attention::launch_typed<Flash<128, 64, 64, 4>, T>(a, s); return;
    case 3: attention::launch_typed<Flash<128, 128, 128, 8>, T>(a, s); return;
    case 4: attention::launch_typed<Flash<128, 128, 128, 8, true>, T>(a, s); return;
    default: attention::launch_typed<Flash<128, 128, 64, 8>, T>(a, s); return;
  }
}

}  // namespace

void launch_flash_attention(const FusedAttentionArgs& args, cudaStream_t stream) {
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
