#pragma once
// Device side of TMA (sm_90): a 2-D tile load `cp.async.bulk.tensor.2d` from a tensor map passed
// as a `const __grid_constant__ CUtensorMap` kernel parameter (tma.h builds it) into 1024-aligned
// shared memory, completing on an mbarrier with a transaction count.
//
// Protocol for one load (research/hopper-flash.md §3.4):
//   one thread: mbarrier_init(bar, 1); fence_mbarrier_init(); then the whole block __syncthreads();
//   one thread: mbarrier_arrive_expect_tx(bar, kTileBytes); tma_load_2d(dst, map, bar, col, row);
//   every reader: mbarrier_wait_parity(bar, phase) (phase 0 the first time the barrier completes,
//   flipping each time after). The mbarrier completion alone makes the tile visible to readers.
#include <cuda.h>

#include <cstdint>

#include "cuda/hopper/host_device.h"
#include "cuda/hopper/wgmma.cuh"

namespace attnprof::cuda::hopper {

__device__ __forceinline__ void mbarrier_init(std::uint64_t* bar, std::uint32_t arrivals) {
#if ATTNPROF_SM90A
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_address(bar)), "r"(arrivals) : "memory");
#else
  (void)bar, (void)arrivals;
  __trap();
#endif
}

// Makes the initialised barrier visible to the async proxy (TMA) and other threads; follow with a
// block barrier.
__device__ __forceinline__ void fence_mbarrier_init() {
#if ATTNPROF_SM90A
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#else
  __trap();
#endif
}

// One arrival plus `bytes` expected from copies that complete_tx on this barrier.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(std::uint64_t* bar, std::uint32_t bytes) {
#if ATTNPROF_SM90A
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(bar)), "r"(bytes)
               : "memory");
#else
  (void)bar, (void)bytes;
  __trap();
#endif
}

// One plain arrival (a consumer releasing a stage back to the producer).
__device__ __forceinline__ void mbarrier_arrive(std::uint64_t* bar) {
#if ATTNPROF_SM90A
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(shared_address(bar)) : "memory");
#else
  (void)bar;
  __trap();
#endif
}

// Whether the barrier's phase `phase` has completed (acquire semantics either way). kMaySuspend
// (try_wait): the thread may sleep a while for the phase before answering; otherwise (test_wait)
// the answer is immediate, for a thread that has other work to do meanwhile.
template <bool kMaySuspend>
__device__ __forceinline__ bool mbarrier_phase_done(std::uint64_t* bar, std::uint32_t phase) {
#if ATTNPROF_SM90A
  std::uint32_t done = 0;
  if constexpr (kMaySuspend)
    asm volatile("{\n.reg .pred complete;\nmbarrier.try_wait.parity.shared::cta.b64 complete, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, complete;\n}\n"
                 : "=r"(done)
                 : "r"(shared_address(bar)), "r"(phase)
                 : "memory");
  else
    asm volatile("{\n.reg .pred complete;\nmbarrier.test_wait.parity.shared::cta.b64 complete, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, complete;\n}\n"
                 : "=r"(done)
                 : "r"(shared_address(bar)), "r"(phase)
                 : "memory");
  return done != 0;
#else
  (void)bar, (void)phase;
  __trap();
  return false;
#endif
}

// Spins until the barrier's phase `phase` has completed. A wrong transaction count or parity would
// hang the GPU instead of failing a test, so after ~2^31 cycles (about a second at H200 clocks) it
// stores to address 0 on purpose: the kernel dies with cudaErrorIllegalAddress ("an illegal memory
// access was encountered") at the host's next synchronising call. Not __trap(): a trap reachable from
// a warpgroup that raised its budget with setmaxnreg.inc makes ptxas (13.0) allocate that warpgroup's
// code within the kernel's entry register count (the flash kernel: 168 instead of 240, 208 bytes
// spilled, wgmmas serialised, C7512); an `exit` there makes it inject wgmma waits (C7517). No printf
// either: a call anywhere in a kernel makes ptxas serialise its wgmmas (C7510).
__device__ __forceinline__ void mbarrier_wait_parity(std::uint64_t* bar, std::uint32_t phase) {
  const long long start = clock64();
  while (!mbarrier_phase_done<true>(bar, phase))
    if (clock64() - start > (1ll << 31)) *static_cast<volatile int*>(nullptr) = static_cast<int>(phase);
}

__device__ __forceinline__ void tma_prefetch_map(const CUtensorMap& map) {
#if ATTNPROF_SM90A
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<std::uint64_t>(&map)) : "memory");
#else
  (void)map;
  __trap();
#endif
}

// Copies the box at element coordinates (col, row) — innermost first, as in the map — into `dst`
// (1024-aligned shared memory, 128B-swizzled by the map), signalling complete_tx on `bar`.
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap& map, std::uint64_t* bar, int col, int row) {
#if ATTNPROF_SM90A
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
          shared_address(dst)),
      "l"(reinterpret_cast<std::uint64_t>(&map)), "r"(col), "r"(row), "r"(shared_address(bar))
      : "memory");
#else
  (void)dst, (void)map, (void)bar, (void)col, (void)row;
  __trap();
#endif
}

// Copies `bytes` (a multiple of 16) from `src` (16-byte aligned global memory) to `dst` (16-byte
// aligned shared memory), signalling complete_tx on `bar`.
__device__ __forceinline__ void bulk_load(void* dst, const void* src, std::uint32_t bytes, std::uint64_t* bar) {
#if ATTNPROF_SM90A
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   shared_address(dst)),
               "l"(src), "r"(bytes), "r"(shared_address(bar))
               : "memory");
#else
  (void)dst, (void)src, (void)bytes, (void)bar;
  __trap();
#endif
}

// L2 eviction-priority hints for cp.async.bulk's .L2::cache_hint operand (the createpolicy
// encodings CUTLASS names EVICT_FIRST and EVICT_LAST): K/V tiles are read by every query block of a
// head, so they should stay; Q is read once.
inline constexpr std::uint64_t kCacheEvictFirst = 0x12F0000000000000ull;
inline constexpr std::uint64_t kCacheEvictLast = 0x14F0000000000000ull;

// Copies the rank-4 box at element coordinates (c0, c1, c2, c3), innermost first as in the map, into
// `dst` (1024-aligned shared memory), signalling complete_tx on `bar`.
__device__ __forceinline__ void tma_load_4d(void* dst, const CUtensorMap& map, std::uint64_t* bar, int c0, int c1,
                                            int c2, int c3, std::uint64_t cache_hint) {
#if ATTNPROF_SM90A
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%2, %3, %4, %5}], [%6], %7;" ::"r"(shared_address(dst)),
      "l"(reinterpret_cast<std::uint64_t>(&map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(shared_address(bar)),
      "l"(cache_hint)
      : "memory");
#else
  (void)dst, (void)map, (void)bar, (void)c0, (void)c1, (void)c2, (void)c3, (void)cache_hint;
  __trap();
#endif
}

// One box (64 columns from `col`, the map's box rows from `row`) of head `head` of batch `batch` of a
// map from make_attention_tile_map, whose seq_inner says the order of its seq and head dimensions.
__device__ __forceinline__ void tma_load_attention_box(void* dst, const CUtensorMap& map, bool seq_inner,
                                                       std::uint64_t* bar, int col, int row, int head, int batch,
                                                       std::uint64_t cache_hint) {
  if (seq_inner)
    tma_load_4d(dst, map, bar, col, row, head, batch, cache_hint);
  else
    tma_load_4d(dst, map, bar, col, head, row, batch, cache_hint);
}

// TMA stores (cp.async.bulk.tensor, shared → global, bulk-group completion). Protocol for one
// store: every thread that wrote the box with st.shared runs fence_proxy_async_shared() (wgmma.cuh;
// its generic-proxy writes become visible to the async proxy), then a barrier among those threads,
// then one thread issues the store(s) and bulk_commit_group(). That thread must bulk_wait_group_read
// before the box's shared memory is written again, and bulk_wait_group_all before the CTA exits.
// Rows past the map's seq extent are not written.
__device__ __forceinline__ void tma_store_4d(const void* src, const CUtensorMap& map, int c0, int c1, int c2, int c3) {
#if ATTNPROF_SM90A
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%1, %2, %3, %4}], [%5];" ::"l"(
                   reinterpret_cast<std::uint64_t>(&map)),
               "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(shared_address(src))
               : "memory");
#else
  (void)src, (void)map, (void)c0, (void)c1, (void)c2, (void)c3;
  __trap();
#endif
}

// The store counterpart of tma_load_attention_box.
__device__ __forceinline__ void tma_store_attention_box(const void* src, const CUtensorMap& map, bool seq_inner, int col,
                                                        int row, int head, int batch) {
  if (seq_inner)
    tma_store_4d(src, map, col, row, head, batch);
  else
    tma_store_4d(src, map, col, head, row, batch);
}

// Adds `bytes` (a multiple of 16) of fp32 at `src` (16-byte aligned shared memory) into `dst`
// (16-byte aligned global memory) element by element, as one bulk-group copy: the store protocol
// above (fence, barrier, one thread issues and commits, bulk_wait_group_read before reuse).
__device__ __forceinline__ void bulk_reduce_add_f32(float* dst, const float* src, std::uint32_t bytes) {
#if ATTNPROF_SM90A
  asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;" ::"l"(dst),
               "r"(shared_address(src)), "r"(bytes)
               : "memory");
#else
  (void)dst, (void)src, (void)bytes;
  __trap();
#endif
}

__device__ __forceinline__ void bulk_commit_group() {
#if ATTNPROF_SM90A
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
#else
  __trap();
#endif
}

// Waits until every committed bulk group of this thread has finished reading shared memory.
__device__ __forceinline__ void bulk_wait_group_read() {
#if ATTNPROF_SM90A
  asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
#else
  __trap();
#endif
}

// Waits until every committed bulk group of this thread has completed (its global writes done).
__device__ __forceinline__ void bulk_wait_group_all() {
#if ATTNPROF_SM90A
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#else
  __trap();
#endif
}

}  // namespace attnprof::cuda::hopper
