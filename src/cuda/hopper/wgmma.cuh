#pragma once
// Warpgroup MMA (sm_90a): one m64n64k16 bf16 × bf16 → fp32 wgmma with both operands in shared
// memory (SS form), described by 128B-swizzle K-major descriptors (wgmma_layout.h), and the fences
// that order it. Issued by all 128 threads of a warpgroup (4 consecutive warps, the first with an
// index divisible by 4). FLOPs: 2·64·64·16 = 131072 per instruction.
//
// Accumulator: float d[32] per thread; register v holds (accumulator_row(t, v), accumulator_col(t, v))
// of the 64×64 tile, t = threadIdx.x % 128 (wgmma_layout.h documents the formula).
//
// Protocol for one GEMM (research/hopper-flash.md §3.1):
//   ordinary smem writes of the operands → fence_proxy_async_shared() in each writer → barrier;
//   wgmma_fence() (also after any ordinary write to d); the wgmmas; wgmma_commit_group();
//   wgmma_wait_group<0>() before d is read or the operand smem is overwritten.
// Every accumulator register passes through an empty asm ("+f") at the fence and after the wait, so
// the compiler neither hoists a read of d above the wait nor keeps d in a register the wgmma does
// not see.
#include <cstdint>

#include "cuda/hopper/host_device.h"
#include "cuda/hopper/wgmma_layout.h"

namespace attnprof::cuda::hopper {

inline constexpr int kWgmmaAccumulators = 32;  // m64n64 fp32: 64·64 / 128 threads

__device__ __forceinline__ std::uint32_t shared_address(const void* pointer) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(pointer));
}

// Any accumulator size (m64nN: N/2 floats). Also used on the A registers of an RS wgmma after its
// wait, so the compiler keeps them unchanged until the asynchronous read has finished.
template <int kCount>
__device__ __forceinline__ void pin_accumulators(float (&d)[kCount]) {
#pragma unroll
  for (int v = 0; v < kCount; ++v) asm volatile("" : "+f"(d[v])::"memory");
}
template <int kCount>
__device__ __forceinline__ void pin_registers(std::uint32_t (&r)[kCount]) {
#pragma unroll
  for (int v = 0; v < kCount; ++v) asm volatile("" : "+r"(r[v])::"memory");
}

// Orders this thread's generic-proxy shared-memory writes before later async-proxy reads (wgmma
// operands, TMA stores). Each writing thread executes it, then the block synchronises.
__device__ __forceinline__ void fence_proxy_async_shared() {
#if ATTNPROF_SM90A
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#else
  __trap();
#endif
}

template <int kCount>
__device__ __forceinline__ void wgmma_fence(float (&d)[kCount]) {
  pin_accumulators(d);
#if ATTNPROF_SM90A
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#else
  __trap();
#endif
}

__device__ __forceinline__ void wgmma_commit_group() {
#if ATTNPROF_SM90A
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#else
  __trap();
#endif
}

// Waits until at most `kPending` committed groups are still in flight.
template <int kPending, int kCount>
__device__ __forceinline__ void wgmma_wait_group(float (&d)[kCount]) {
#if ATTNPROF_SM90A
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(kPending) : "memory");
#else
  __trap();
#endif
  pin_accumulators(d);
}

// d = A·Bᵀ + (accumulate ? d : 0), A 64×16 and B 64×16 (N rows of K), both K-major in smem.
__device__ __forceinline__ void wgmma_m64n64k16_bf16_ss(float (&d)[kWgmmaAccumulators], std::uint64_t a_descriptor,
                                                        std::uint64_t b_descriptor, bool accumulate) {
#if ATTNPROF_SM90A
  asm volatile(
      "{\n"
      ".reg .pred scale_d;\n"
      "setp.ne.b32 scale_d, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "%32, %33, scale_d, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(a_descriptor), "l"(b_descriptor), "r"(static_cast<int>(accumulate))
      : "memory");  // it reads shared memory: keep it after the operand stores and the fence
#else
  (void)d, (void)a_descriptor, (void)b_descriptor, (void)accumulate;
  __trap();
#endif
}

// The descriptor of k16 step `step` inside a 64-column (128-byte) swizzle atom whose tile starts at
// `tile` (1024-aligned): the hardware swizzles on absolute address bits, so the step is a plain
// +32 bytes on the start address (2 in the >>4 field).
__device__ __forceinline__ std::uint64_t sw128_kmajor_descriptor_at(const void* tile, int step) {
  return sw128_kmajor_descriptor(shared_address(tile) + static_cast<std::uint32_t>(step) * 32u);
}

}  // namespace attnprof::cuda::hopper
