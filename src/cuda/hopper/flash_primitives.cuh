#pragma once
// Small device building blocks of the sm_90a flash kernel (flash_traits.cuh): the timeline build's
// clock records, register reallocation, named barriers and the consumers' GEMM turn (pingpong), and
// a few single-instruction math and shared-memory helpers.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "cuda/hopper/flash_timeline.h"
#include "cuda/hopper/flash_traits.cuh"
#include "cuda/hopper/host_device.h"
#include "cuda/hopper/wgmma.cuh"

namespace attnprof::cuda::hopper::flash_sm90 {

#if ATTNPROF_SM90A
// The timeline build's record of one consumer warpgroup's pass over one query tile (host:
// FlashTileTiming): meta (SM << 40 | warpgroup << 32 | key tiles), then the SM clock at the tile's
// start, once its Q is there, at the main loop's end and at the epilogue's end, then the global
// timer (ns) at the start and at the epilogue's end.

__device__ __forceinline__ std::uint64_t global_timer_ns() {
  std::uint64_t ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}
__device__ __forceinline__ std::uint32_t sm_id() {
  std::uint32_t id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}
// Writes word `word` of this warpgroup's record of `tile` (one thread per warpgroup calls it).
template <class Tr>
__device__ __forceinline__ void timeline_mark(const FlashSm90Params& p, int tile, int consumer, int word,
                                              std::uint64_t value) {
  if constexpr (Tr::kTimeline)
    p.timeline[(static_cast<std::int64_t>(tile) * Tr::kConsumerWarpgroups + consumer) * kTimelineWords + word] = value;
}

// The producer's word: the clock when it handed tile `tile`'s Q to the TMA (or, for a tile that
// sees no key, released the consumers), in every consumer warpgroup's record of the tile.
template <class Tr>
__device__ __forceinline__ void timeline_q_issued(const FlashSm90Params& p, int tile, std::uint64_t clock) {
  if constexpr (Tr::kTimeline)
    for (int consumer = 0; consumer < Tr::kConsumerWarpgroups; ++consumer) timeline_mark<Tr>(p, tile, consumer, 8, clock);
}

template <int kRegisters>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}
template <int kRegisters>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}
// Named barrier among `threads` threads (a multiple of 32); id 0 is __syncthreads'.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// A 16-byte shared-memory record another thread wrote before an mbarrier arrive this thread has
// waited on (the asm keeps the load after the wait, which is asm volatile with a memory clobber).
__device__ __forceinline__ int4 ld_shared_v4_s32(const int* address) {
  int4 value;
  asm volatile("ld.shared.v4.s32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(value.x), "=r"(value.y), "=r"(value.z), "=r"(value.w)
               : "r"(shared_address(address))
               : "memory");
  return value;
}

__device__ __forceinline__ float fast_reciprocal(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

template <class T>
__device__ __forceinline__ std::uint32_t pack_pair(float lo, float hi) {
  if constexpr (std::is_same_v<T, __half>) {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<std::uint32_t*>(&v);
  } else {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<std::uint32_t*>(&v);
  }
}
// Pingpong between the consumer warpgroups (FA3's warp scheduler barriers): a warpgroup issues
// its GEMMs only while holding the token, then passes it, so one warpgroup's softmax runs while
// the other's GEMMs own the tensor cores; with 3 warpgroups the turn goes round. Barrier 8 + w is
// warpgroup w's (256 threads: its own 128 syncing, the previous warpgroup's 128 arriving).
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
constexpr int kFirstTurnBarrier = 8;  // 1 .. kConsumerWarpgroups are the epilogue's
__device__ __forceinline__ void take_gemm_turn(int consumer) {
  named_barrier_sync(kFirstTurnBarrier + consumer, 2 * kWarpgroupThreads);
}
template <class Tr>
__device__ __forceinline__ void pass_gemm_turn(int consumer) {
  named_barrier_arrive(kFirstTurnBarrier + (consumer + 1) % Tr::kConsumerWarpgroups, 2 * kWarpgroupThreads);
}
#endif  // ATTNPROF_SM90A

}  // namespace attnprof::cuda::hopper::flash_sm90
