// The sm_90a flash kernel's two GEMMs alone (flash_gemm_probe.h), built from the kernel's own
// producer and main-loop pieces (flash_producer.cuh, flash_mainloop.cuh). Test-only.
#include "cuda/flash_gemm_probe.h"

#include <attnprof/error.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/check.h"
#include "cuda/hopper/flash_heuristics.h"
#include "cuda/hopper/flash_hopper.h"
#include "cuda/hopper/flash_mainloop.cuh"
#include "cuda/hopper/flash_producer.cuh"
#include "cuda/hopper/flash_traits.cuh"
#include "cuda/hopper/tma.cuh"
#include "cuda/hopper/tma.h"
#include "cuda/hopper/wgmma_layout.h"
#include "cuda/str_cat.h"

namespace attnprof::cuda::hopper {
namespace {

using namespace flash_sm90;

// The kernel's two GEMMs alone: one consumer warpgroup (consumer 0 of
// the kernel's traits) issues S = Q·Kᵀ and O = P·V exactly as the main loop does (same helpers,
// same shared-memory layout and descriptors, same TMA loads), with P taken from memory instead of a
// softmax, and writes S and O out through the accumulator layout.
template <class Tr, class T>
__global__ void __launch_bounds__(kWarpgroupThreads, 1)
    flash_gemm_probe_kernel(const __grid_constant__ CUtensorMap q_map, const __grid_constant__ CUtensorMap k_map,
                            const __grid_constant__ CUtensorMap v_map, const FlashSm90Params p,
                            const std::uint16_t* p_matrix, float* s_out, float* o_out) {
#if ATTNPROF_SM90A
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = smem_raw + (1024u - shared_address(smem_raw) % 1024u) % 1024u;
  PipelineBarriers& bars = *reinterpret_cast<PipelineBarriers*>(smem + Tr::kBarrierOffset);
  if (threadIdx.x == 0) {
    mbarrier_init(&bars.q_full[0], 1);
    mbarrier_init(&bars.k_full[0], 1);
    mbarrier_init(&bars.v_full[0], 1);
    fence_mbarrier_init();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    load_q<Tr>(q_map, p.q_seq_inner, smem, &bars.q_full[0], 0, 0, 0);
    load_kv_tile<Tr>(smem + Tr::kKOffset, k_map, p.k_seq_inner, &bars.k_full[0], 0, 0, 0);
    load_kv_tile<Tr>(smem + Tr::kVOffset, v_map, p.v_seq_inner, &bars.v_full[0], 0, 0, 0);
  }
  mbarrier_wait_parity(&bars.q_full[0], 0);
  mbarrier_wait_parity(&bars.k_full[0], 0);
  mbarrier_wait_parity(&bars.v_full[0], 0);
  const ConsumerView<Tr> c(smem, 0);
  const int t = static_cast<int>(threadIdx.x);

  float s[Tr::kSAccumulators];
#pragma unroll
  for (int v = 0; v < Tr::kSAccumulators; ++v) s[v] = __int_as_float(0x7fc00000);  // scale-d 0 must drop it
  issue_qk<Tr, T>(s, c, 0);
  wgmma_wait_group<0>(s);
#pragma unroll
  for (int v = 0; v < Tr::kSAccumulators; ++v) s_out[accumulator_row(t, v) * Tr::kBlockN + accumulator_col(t, v)] = s[v];

  std::uint32_t p_frag[Tr::kPSteps][4];
#pragma unroll
  for (int step = 0; step < Tr::kPSteps; ++step)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int row = rs_a_row(t, r), col = 16 * step + rs_a_col(t, r, 0);
      p_frag[step][r] = static_cast<std::uint32_t>(p_matrix[row * Tr::kBlockN + col]) |
                        (static_cast<std::uint32_t>(p_matrix[row * Tr::kBlockN + col + 1]) << 16);
    }
  float o[Tr::kOAccumulators];
#pragma unroll
  for (int v = 0; v < Tr::kOAccumulators; ++v) o[v] = 0.0f;
  issue_pv<Tr, T>(o, p_frag, c, 0);
  wgmma_wait_group<0>(o);
#pragma unroll
  for (int step = 0; step < Tr::kPSteps; ++step) pin_registers(p_frag[step]);
#pragma unroll
  for (int v = 0; v < Tr::kOAccumulators; ++v) o_out[accumulator_row(t, v) * Tr::kHeadDim + accumulator_col(t, v)] = o[v];
#else
  (void)q_map, (void)k_map, (void)v_map, (void)p, (void)p_matrix, (void)s_out, (void)o_out;
  __trap();
#endif
}

template <class Tr>
void launch_gemm_probe(float* s_out, float* o_out, const void* q, const void* k, const void* v,
                       const std::uint16_t* p_matrix, std::int64_t d, cudaStream_t stream) {
  // One (batch, head) of 128 rows × d, contiguous: the kernel's own map builder and box sizes (the
  // kernel's D may be larger: its columns past d load as zeros).
  auto map = [&](const void* data, std::uint32_t box_rows) {
    return make_attention_tile_map(data, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 1, 1, 128, static_cast<std::uint64_t>(d),
                                   128 * d, 128 * d, d, box_rows);
  };
  const AttentionTileMap q_map = map(q, Tr::kBlockM), k_map = map(k, Tr::kBlockN), v_map = map(v, Tr::kBlockN);
  FlashSm90Params p;
  p.q_seq_inner = q_map.seq_inner;
  p.k_seq_inner = k_map.seq_inner;
  p.v_seq_inner = v_map.seq_inner;
  auto kernel = flash_gemm_probe_kernel<Tr, __nv_bfloat16>;
  ATTNPROF_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Tr::kSmemBytes));
  kernel<<<1, kWarpgroupThreads, Tr::kSmemBytes, stream>>>(q_map.map, k_map.map, v_map.map, p, p_matrix, s_out, o_out);
  ATTNPROF_CUDA_CHECK_LAUNCH("flash_gemm_probe_kernel");
}

}  // namespace

void run_flash_gemm_probe(float* s_out, float* o_out, const void* q, const void* k, const void* v,
                          const std::uint16_t* p_matrix, int head_dim, cudaStream_t stream) {
  if (auto why = hopper_unavailable_reason()) throw Error(str_cat("run_flash_gemm_probe: ", *why));
  switch (flash_sm90_kernel_head_dim(head_dim)) {
    case 64: return launch_gemm_probe<CtaPerTileTraits<64>>(s_out, o_out, q, k, v, p_matrix, head_dim, stream);
    case 96: return launch_gemm_probe<CtaPerTileTraits<96>>(s_out, o_out, q, k, v, p_matrix, head_dim, stream);
    case 128: return launch_gemm_probe<CtaPerTileTraits<128>>(s_out, o_out, q, k, v, p_matrix, head_dim, stream);
    case 192: return launch_gemm_probe<CtaPerTileTraits<192>>(s_out, o_out, q, k, v, p_matrix, head_dim, stream);
    case 256: return launch_gemm_probe<CtaPerTileTraits<256>>(s_out, o_out, q, k, v, p_matrix, head_dim, stream);
    default: throw Error(str_cat("run_flash_gemm_probe: head_dim ", head_dim, " (a multiple of 8 from 8 to 256)"));
  }
}

}  // namespace attnprof::cuda::hopper
