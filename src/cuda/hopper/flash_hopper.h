#pragma once
// Host side of the sm_90a `flash` forward (flash_hopper.cu: wgmma + TMA + mbarriers, warp
// specialised) and the choice between it and the mma.sync kernel (flash_forward.cu) that
// launch_flash_attention makes on every call.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "cuda/fused_attention.h"
#include "cuda/hopper/flash_timeline.h"

namespace attnprof::cuda::hopper {

// sm80: flash_forward.cu's mma.sync kernel. sm90: this one with FA3's schedule (S·Kᵀ of the next tile
// and P·V of the current one in flight together, softmax under the P·V, the consumer warpgroups
// taking turns at the tensor cores) and FA3's tiles (D 64: 192 query rows, 3 consumer warpgroups;
// D 128: 128 rows, 2). sm90_m128: the same with 128-row CTAs at D 64 too (less causal waste at short
// sequences: every warpgroup of a CTA visits the CTA's key tiles; less softmax hiding).
// sm90_persistent: sm90 on a grid of one CTA per SM striding through the same tile order, so a CTA's
// next loads overlap its epilogue (FA3's persistent grid, static round-robin, not its LPT
// scheduler). sm90_serial:
// FA3's tiles with every GEMM waited for (v1; kept to localise a fault of the overlapped schedule and
// to measure what it gains).
// sm90_v5: the persistent grid with the next query tile's Q loaded into a second buffer while the
// current tile runs (so a CTA's next tile never waits for Q after its epilogue), O rescaled only
// when a row's max changed, and the tiles dealt in snake order (even waves CTA i takes the i-th,
// odd waves the i-th from the end: round robin over the longest-first order leaves the busiest
// CTA 6% above the mean at 4x16x4096x128, snake 0.0%); 128-row CTAs at D 64 and 128.
// sm90_v6: v5's kernel on one CTA per tile (the hardware hands tiles to SMs as they free up),
// the tiles ordered in L2 sections: as many (batch, head) pairs as fit their K and V in 16 MiB,
// longest first within a section, so the query blocks that re-read a head's K/V run together
// (16x32x512x128 otherwise re-reads most K/V tiles from HBM: 134 MB of K/V read up to 4 times).
// sm90_v7 (opt-in): v5 with O staged in a shared-memory tile of its own and written by TMA stores
// (Q goes back to the producer as soon as the main loop ends; the warpgroup does not wait for its
// O to reach global memory) and, at D 64, 3 K/V stages: what cuDNN's kernels hold (bench/RESULTS.md,
// session 3); the producer hands each tile's coordinates to the consumers in shared memory.
// sm90_v8: v7's kernel with FA3's dynamic scheduler: each CTA's producer draws its next query tile
// from a device counter (atomicAdd) once the current tile's Q is out, over v6's L2-section order
// (longest first within a section), so a CTA that drew short tiles takes more and the SMs end
// together, and issues that tile's Q as soon as its buffer is free; the last CTA sets the counter
// back to zero, so a forward stays one kernel with no memset.
// sm90_v10: v8's schedule on a kernel with P's row sums taken from the tensor cores at D 64 (P·V
// over V and 8 columns of ones, m64n72k16, instead of an FADD per element; the fp32 sum is kept
// only when the LSE is asked for) and, at both head dims, a TMA store per warp of its 16 rows of
// O (no named barrier in the epilogue) with rcp.approx for the normaliser.
// sm90_auto (the default on Hopper): one of the above per problem, by auto_flash_kernel.
enum class FlashKernel {
  sm80, sm90, sm90_m128, sm90_persistent, sm90_serial, sm90_auto, sm90_v5, sm90_v6, sm90_v7, sm90_v8,
  sm90_v10
};

// The schedule sm90_auto runs, chosen from the H200 measurements of 2026-11-30 (bench/RESULTS.md,
// causal bf16, the schedules timed in one run beside PyTorch's cuDNN; session 5's calls 4 and 5):
// D 64 up to 2048 query rows and D 128 up to 4096 take sm90_v10 (16x32x512x128: v10 0.096, v8
// 0.099; 4x16x4096x128: v10 0.445, v8 0.452 ms); longer ones take sm90 (4x16x4096x64: sm90 0.324,
// v10 0.342, v8 0.346; 1x16x16384x128: sm90 1.598, v10 1.630, v8 1.652: the L2 sections of the
// counter schedule hold 2 heads there, 256 tiles, so the last section's longest tiles start with
// under two waves of work behind them: v8's timeline shows SMs ending up to 190 µs apart).
FlashKernel auto_flash_kernel(std::int64_t head_dim, std::int64_t seq_q);

// sm90_auto on a compute capability 9.0 device, sm80 elsewhere. ATTNPROF_FLASH_KERNEL=sm80|sm90|sm90-m128|
// sm90-persistent|sm90-serial|sm90-v5|sm90-v6|sm90-v7|sm90-v8|sm90-v10 overrides it (so one run can time each); ATTNPROF_FLASH_CONFIG (a tiling of the sm80
// kernel, gpu_bench's `flash@k`) set to anything but 0 implies sm80 unless ATTNPROF_FLASH_KERNEL is
// set. Throws UsageError for another ATTNPROF_FLASH_KERNEL value, or for an sm90 one on a device
// without it.
FlashKernel flash_kernel_choice();

// The sm_90a kernel: bf16/fp16, head_dim 64 or 128, causal (j <= i + causal_offset) or not, GQA,
// any strides with unit stride in d and 16-byte aligned rows, optional LSE. Does not synchronise.
// Throws UsageError for a dtype or head dim it does not take (naming the parameter), Error for a device
// that is not compute capability 9.0, a problem beyond its grid, or a failed CUDA call.
void launch_flash_attention_sm90(const FusedAttentionArgs& args, cudaStream_t stream,
                                 FlashKernel schedule = FlashKernel::sm90_auto);

// The number of (batch, head) pairs per section of the tile order sm90_v5 / sm90_v6 would use for
// `args` on a device of `multiprocessors` SMs (host arithmetic only, for tests and the docs): v6 as
// many as fit their K and V in 16 MiB of L2; v5 1 (head by head) when its snake deal over that
// order is within 1% as even as over the longest-first order, else batch·heads (that order).
int flash_v5_section_pairs(const FusedAttentionArgs& args, FlashKernel schedule, int multiprocessors);

// One sm90-v8 (or sm90-v7 or sm90-v10: `schedule`) forward through its timeline build (the same kernel plus
// clock reads at each pass's start, Q arrival, main loop end and epilogue end and at each Q issue;
// flash_timeline.h), returning a record per (query tile, consumer warpgroup). bf16, head_dim 64 or
// 128 (UsageError otherwise); Error for another schedule; synchronises.
std::vector<FlashTileTiming> run_flash_timeline_sm90(const FusedAttentionArgs& args, cudaStream_t stream,
                                                     FlashKernel schedule = FlashKernel::sm90_v8);

// The kernel's two GEMMs alone, on one consumer warpgroup, to localise a failure of the whole kernel:
// q, k, v are device bf16 [128 × head_dim] row-major (one head; q rows 64.. unused), p_matrix is bf16
// bits [64 × 128]; writes s_out = q[0:64]·kᵀ (64 × 128 fp32) and o_out = p_matrix·v (64 × head_dim
// fp32), both row-major, loading through the kernel's TMA maps and reading through its descriptors.
// head_dim 64 or 128; launches one CTA on `stream` and does not synchronise.
void run_flash_gemm_probe(float* s_out, float* o_out, const void* q, const void* k, const void* v,
                          const std::uint16_t* p_matrix, int head_dim, cudaStream_t stream);

}  // namespace attnprof::cuda::hopper
