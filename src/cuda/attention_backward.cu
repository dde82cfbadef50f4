// Launches of the FlashAttention-2 backward (kernels in attention_backward_kernel.cuh): Δ, then
// dK/dV, then dQ, in stream order. Instantiations: D 32, 64, 96, 128, 192 and 256 × bf16 and fp16
// for each of the two tile kernels, bf16 and fp16 for Δ. A head dim that is a multiple of 8 runs on
// the smallest of them at least as large (chunks past the head dim zero-filled on load, columns
// past it never stored); run_fused_backward pads the others.
//
// Tiles: 4 warps of 16 keys (dK/dV) or 16 query rows (dQ), one shared-memory stage (load, wait,
// compute). Shared memory: dK/dV K + V (64 keys) + Q + dO (kBlockM rows) + LSE and Δ = 16.5 KiB at
// D 32, 32.5 at D 64, 48.5 at D 96, 48.25 at D 128, 72.25 at D 192, 96.25 at D 256; dQ Q + dO (64
// rows) + K + V (kBlockN keys) = 16 KiB at D 32, 32 at D 64, 48 at D 96, 64 at D 128, 72 at D 192,
// 80 at D 256. Registers (ptxas, bf16 and fp16 alike), sm_90a / sm_80: dK/dV D 32 167 / 166, D 64
// 240 / 238, D 96 248 / 243, D 128 244 / 244, D 192 239 / 225, D 256 247 / 247; dQ D 32 126 / 126,
// D 64 164 / 167, D 96 174 / 174, D 128 233 / 220, D 192 255 / 250, D 256 255 / 255 with 8 / 32
// bytes spilled (the others 0; with 32 or 64 keys a tile, or a dQ column split as dK/dV's, ptxas
// spilled 44 to 76 bytes at D 256); Δ 36 / 38 (fp16), 36 / 42 (bf16).
#include <attnprof/error.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "cuda/attention_backward_kernel.cuh"
#include "cuda/check.h"
#include "cuda/hopper/flash_bwd.h"
#include "cuda/kernel_attributes.h"

namespace attnprof::cuda {
namespace {

using attention_backward::BwdTraits;

// dK/dV: 64 keys per CTA against 64 query rows at a time (32 at D 128, 192 and 256: at D 128 with
// 64 its two 16×64 score blocks and the 16×128 dK and dV accumulators spilled). dQ: 64 query rows,
// 64-key tiles. At D 192 and 256 each dK/dV CTA accumulates one column half (96 or 128 columns,
// grid z 2) and the dQ CTA takes 32- or 16-key tiles, so the accumulators fit the registers.
using DkdvD32 = BwdTraits<32, 64, 64>;
using DkdvD64 = BwdTraits<64, 64, 64>;
using DkdvD96 = BwdTraits<96, 64, 64>;
using DkdvD128 = BwdTraits<128, 32, 64>;
using DkdvD192 = BwdTraits<192, 32, 64, 96>;
using DkdvD256 = BwdTraits<256, 32, 64, 128>;
template <int D>
using Dq = BwdTraits<D, 64, 64>;
using DqD192 = BwdTraits<192, 64, 32>;
using DqD256 = BwdTraits<256, 64, 16>;

template <class Tr>
constexpr int dkdv_smem_bytes() {
  return 2 * (Tr::kBlockN + Tr::kBlockM) * Tr::kRowBytes + 2 * Tr::kBlockM * 4;
}
template <class Tr>
constexpr int dq_smem_bytes() {
  return 2 * (Tr::kBlockN + Tr::kBlockM) * Tr::kRowBytes;
}

// The kernels' index arithmetic is 32-bit within a (batch, head): sequence positions, the causal
// limit and in-tile offsets (rows·stride); the grid's y is batch·heads (at most 65535).
FusedBackwardArgs checked(const FusedBackwardArgs& args) {
  if (args.fwd.seq_q + args.fwd.seq_k > (1ll << 30))
    throw Error("fused backward: seq_q + seq_k " + std::to_string(args.fwd.seq_q + args.fwd.seq_k) + " exceeds 2^30");
  if (args.fwd.batch * args.fwd.heads > 65535)
    throw Error("fused backward: batch·heads " + std::to_string(args.fwd.batch * args.fwd.heads) +
                " exceeds the grid's 65535 in y");
  for (const std::int64_t* stride : {args.fwd.q_stride, args.fwd.k_stride, args.fwd.v_stride, args.fwd.o_stride,
                                     args.do_stride, args.dq_stride, args.dk_stride, args.dv_stride})
    if (64 * stride[2] >= (1ll << 31))
      throw Error("fused backward: a row stride of " + std::to_string(stride[2]) +
                  " elements exceeds the kernels' 32-bit in-tile offsets");
  FusedBackwardArgs c = args;
  c.fwd.causal_offset = std::clamp<std::int64_t>(args.fwd.causal_offset, -args.fwd.seq_q, args.fwd.seq_k);
  return c;
}

template <class TrKV, class TrQ, class T>
void launch_tiles(const FusedBackwardArgs& args, cudaStream_t stream) {
  auto dkdv = attention_backward::flash_bwd_dkdv_kernel<TrKV, T>;
  auto dq = attention_backward::flash_bwd_dq_kernel<TrQ, T>;
  configure_kernel_once(reinterpret_cast<const void*>(dkdv), dkdv_smem_bytes<TrKV>());
  configure_kernel_once(reinterpret_cast<const void*>(dq), dq_smem_bytes<TrQ>());
  const unsigned n_blocks = static_cast<unsigned>((args.fwd.seq_k + TrKV::kBlockN - 1) / TrKV::kBlockN);
  const unsigned m_blocks = static_cast<unsigned>((args.fwd.seq_q + TrQ::kBlockM - 1) / TrQ::kBlockM);
  dkdv<<<dim3(n_blocks, static_cast<unsigned>(args.fwd.batch * args.fwd.kv_heads), TrKV::kColumnSlices),
         TrKV::kThreads, dkdv_smem_bytes<TrKV>(), stream>>>(args);
  ATTNPROF_CUDA_CHECK_LAUNCH("flash_bwd_dkdv_kernel");
  dq<<<dim3(m_blocks, static_cast<unsigned>(args.fwd.batch * args.fwd.heads), TrQ::kColumnSlices), TrQ::kThreads,
       dq_smem_bytes<TrQ>(), stream>>>(args);
  ATTNPROF_CUDA_CHECK_LAUNCH("flash_bwd_dq_kernel");
}

template <class T>
void launch_typed(const FusedBackwardArgs& args, cudaStream_t stream, float* sm90_dq_accum) {
  if (sm90_dq_accum != nullptr) return hopper::launch_flash_backward_sm90(args, sm90_dq_accum, stream);
  const std::int64_t rows = args.fwd.batch * args.fwd.heads * args.fwd.seq_q;
  attention_backward::flash_bwd_dot_do_o_kernel<T><<<static_cast<unsigned>((rows + 7) / 8), 256, 0, stream>>>(args);
  ATTNPROF_CUDA_CHECK_LAUNCH("flash_bwd_dot_do_o_kernel");
  if (args.fwd.head_dim <= 32)
    launch_tiles<DkdvD32, Dq<32>, T>(args, stream);
  else if (args.fwd.head_dim <= 64)
    launch_tiles<DkdvD64, Dq<64>, T>(args, stream);
  else if (args.fwd.head_dim <= 96)
    launch_tiles<DkdvD96, Dq<96>, T>(args, stream);
  else if (args.fwd.head_dim <= 128)
    launch_tiles<DkdvD128, Dq<128>, T>(args, stream);
  else if (args.fwd.head_dim <= 192)
    launch_tiles<DkdvD192, DqD192, T>(args, stream);
  else
    launch_tiles<DkdvD256, DqD256, T>(args, stream);
}

}  // namespace

void launch_fused_backward(const FusedBackwardArgs& args, cudaStream_t stream, float* sm90_dq_accum) {
  if (args.fwd.head_dim < 8 || args.fwd.head_dim > 256 || args.fwd.head_dim % 8 != 0)
    throw UsageError("head_dim " + std::to_string(args.fwd.head_dim) +
                     ": the backward's kernels take multiples of 8 up to 256 (run_fused_backward pads the others)");
  if (args.fwd.batch * args.fwd.heads * args.fwd.seq_q == 0 || args.fwd.batch * args.fwd.kv_heads * args.fwd.seq_k == 0)
    return;
  const FusedBackwardArgs c = checked(args);
  if (c.fwd.dtype == DType::bf16)
    launch_typed<__nv_bfloat16>(c, stream, sm90_dq_accum);
  else if (c.fwd.dtype == DType::fp16)
    launch_typed<__half>(c, stream, sm90_dq_accum);
  else
    throw UsageError("dtype " + std::string(dtype_name(c.fwd.dtype)) + ": the GPU backward takes bf16 or fp16");
}

}  // namespace attnprof::cuda
