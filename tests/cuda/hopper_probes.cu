// Probe kernels for the Hopper building blocks (hopper_probes.h says what each computes). One CTA of one
// warpgroup (128 threads), static shared memory only: 16 KiB of tiles + one mbarrier.
// FLOPs: 131072 (wgmma probe), 524288 (chain). Bytes: 8 KiB (TMA probe), 16 KiB (chain) loaded.
#include "cuda/hopper_probes.h"

#include <attnprof/error.h>

#include <cstdint>

#include "cuda/check.h"
#include "cuda/hopper/flash_hopper.h"
#include "cuda/hopper/swizzle.h"
#include "cuda/hopper/tma.cuh"
#include "cuda/hopper/tma.h"
#include "cuda/hopper/wgmma.cuh"
#include "cuda/str_cat.h"

namespace attnprof::cuda::hopper {
namespace {

constexpr int kWarpgroupThreads = 128;

#if ATTNPROF_SM90A
constexpr int kTileN = 64;  // accumulator columns (m64n64)

// A misaligned tile would be swizzled with a different phase than swizzle.h assumes: trap (no
// printf, which would serialise the wgmmas, C7510).
__device__ __forceinline__ void require_swizzle_alignment(const void* tile) {
  if (shared_address(tile) % kSwizzleAtomBytes != 0) __trap();
}

__device__ __forceinline__ void store_accumulators(float* out, const float (&d)[kWgmmaAccumulators]) {
  const int t = static_cast<int>(threadIdx.x);
#pragma unroll
  for (int v = 0; v < kWgmmaAccumulators; ++v) out[accumulator_row(t, v) * kTileN + accumulator_col(t, v)] = d[v];
}
#endif

__global__ void __launch_bounds__(kWarpgroupThreads, 1)
    wgmma_probe_kernel(float* out, const std::uint16_t* a, const std::uint16_t* b, const float* c) {
#if ATTNPROF_SM90A
  __shared__ __align__(1024) unsigned char a_tile[kTileBytes];
  __shared__ __align__(1024) unsigned char b_tile[kTileBytes];
  const int t = static_cast<int>(threadIdx.x);
  if (t == 0) {
    require_swizzle_alignment(a_tile);
    require_swizzle_alignment(b_tile);
  }
  {
    // a and b rows are 16 bf16 = 2 chunks of 16 bytes: 64 rows × 2 chunks = one chunk per thread.
    const int row = t / 2, chunk = t % 2;
    const uint4 a_chunk = reinterpret_cast<const uint4*>(a)[row * 2 + chunk];
    const uint4 b_chunk = reinterpret_cast<const uint4*>(b)[row * 2 + chunk];
    *reinterpret_cast<uint4*>(a_tile + swizzle128_chunk_offset(row, chunk)) = a_chunk;
    *reinterpret_cast<uint4*>(b_tile + swizzle128_chunk_offset(row, chunk)) = b_chunk;
  }
  fence_proxy_async_shared();  // ordinary stores above, async-proxy (wgmma) reads below
  __syncthreads();

  float d[kWgmmaAccumulators];
#pragma unroll
  for (int v = 0; v < kWgmmaAccumulators; ++v) d[v] = c[accumulator_row(t, v) * kTileN + accumulator_col(t, v)];
  wgmma_fence(d);
  wgmma_m64n64k16_bf16_ss(d, sw128_kmajor_descriptor_at(a_tile, 0), sw128_kmajor_descriptor_at(b_tile, 0),
                          /*accumulate=*/true);
  wgmma_commit_group();
  wgmma_wait_group<0>(d);
  store_accumulators(out, d);
#else
  (void)out, (void)a, (void)b, (void)c;
  __trap();
#endif
}

__global__ void __launch_bounds__(kWarpgroupThreads, 1)
    tma_tile_probe_kernel(const __grid_constant__ CUtensorMap map, uint4* image, int tile_row, int tile_col) {
#if ATTNPROF_SM90A
  __shared__ __align__(1024) unsigned char tile[kTileBytes];
  __shared__ std::uint64_t loaded;
  const int t = static_cast<int>(threadIdx.x);
  if (t == 0) {
    require_swizzle_alignment(tile);
    tma_prefetch_map(map);
    mbarrier_init(&loaded, 1);
    fence_mbarrier_init();
  }
  __syncthreads();
  if (t == 0) {
    mbarrier_arrive_expect_tx(&loaded, kTileBytes);
    tma_load_2d(tile, map, &loaded, tile_col * static_cast<int>(kTileCols), tile_row * static_cast<int>(kTileRows));
  }
  mbarrier_wait_parity(&loaded, 0);
  for (int i = t; i < static_cast<int>(kTileBytes / 16); i += kWarpgroupThreads)
    image[i] = reinterpret_cast<const uint4*>(tile)[i];
#else
  (void)map, (void)image, (void)tile_row, (void)tile_col;
  __trap();
#endif
}

__global__ void __launch_bounds__(kWarpgroupThreads, 1)
    tma_wgmma_probe_kernel(const __grid_constant__ CUtensorMap a_map, int a_tile_row,
                           const __grid_constant__ CUtensorMap b_map, int b_tile_row, float* out) {
#if ATTNPROF_SM90A
  __shared__ __align__(1024) unsigned char a_tile[kTileBytes];
  __shared__ __align__(1024) unsigned char b_tile[kTileBytes];
  __shared__ std::uint64_t loaded;
  const int t = static_cast<int>(threadIdx.x);
  if (t == 0) {
    require_swizzle_alignment(a_tile);
    require_swizzle_alignment(b_tile);
    tma_prefetch_map(a_map);
    tma_prefetch_map(b_map);
    mbarrier_init(&loaded, 1);
    fence_mbarrier_init();
  }
  __syncthreads();
  if (t == 0) {
    mbarrier_arrive_expect_tx(&loaded, 2 * kTileBytes);
    tma_load_2d(a_tile, a_map, &loaded, 0, a_tile_row * static_cast<int>(kTileRows));
    tma_load_2d(b_tile, b_map, &loaded, 0, b_tile_row * static_cast<int>(kTileRows));
  }
  mbarrier_wait_parity(&loaded, 0);

  float d[kWgmmaAccumulators];
#pragma unroll
  for (int v = 0; v < kWgmmaAccumulators; ++v) d[v] = __int_as_float(0x7fc00000);  // NaN: scale-d 0 must drop it
  wgmma_fence(d);
#pragma unroll
  for (int step = 0; step < static_cast<int>(kTileCols) / 16; ++step)
    wgmma_m64n64k16_bf16_ss(d, sw128_kmajor_descriptor_at(a_tile, step), sw128_kmajor_descriptor_at(b_tile, step),
                            /*accumulate=*/step > 0);
  wgmma_commit_group();
  wgmma_wait_group<0>(d);
  store_accumulators(out, d);
#else
  (void)a_map, (void)a_tile_row, (void)b_map, (void)b_tile_row, (void)out;
  __trap();
#endif
}

void require_hopper() {
  if (auto why = hopper_unavailable_reason()) throw Error(str_cat("Hopper probe kernels: ", *why));
}

}  // namespace

void run_wgmma_probe(float* out, const std::uint16_t* a, const std::uint16_t* b, const float* c, cudaStream_t stream) {
  require_hopper();
  wgmma_probe_kernel<<<1, kWarpgroupThreads, 0, stream>>>(out, a, b, c);
  ATTNPROF_CUDA_CHECK_LAUNCH("wgmma_probe_kernel");
}

void run_tma_tile_probe(void* smem_image, const CUtensorMap& map, int tile_row, int tile_col, cudaStream_t stream) {
  require_hopper();
  tma_tile_probe_kernel<<<1, kWarpgroupThreads, 0, stream>>>(map, static_cast<uint4*>(smem_image), tile_row, tile_col);
  ATTNPROF_CUDA_CHECK_LAUNCH("tma_tile_probe_kernel");
}

void run_tma_wgmma_probe(float* out, const CUtensorMap& a_map, int a_tile_row, const CUtensorMap& b_map,
                         int b_tile_row, cudaStream_t stream) {
  require_hopper();
  tma_wgmma_probe_kernel<<<1, kWarpgroupThreads, 0, stream>>>(a_map, a_tile_row, b_map, b_tile_row, out);
  ATTNPROF_CUDA_CHECK_LAUNCH("tma_wgmma_probe_kernel");
}

}  // namespace attnprof::cuda::hopper
