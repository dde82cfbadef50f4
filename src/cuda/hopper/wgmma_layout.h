#pragma once
// The two layouts a warpgroup MMA depends on, as plain functions the host tests can check:
// the 64-bit shared-memory matrix descriptor (128B swizzle, K-major) and where each element of the
// m64nNk16 fp32 accumulator lives (thread of the warpgroup, register index).
#include <cstdint>

#include "cuda/hopper/host_device.h"

namespace attnprof::cuda::hopper {

// Descriptor of a K-major bf16 operand stored as 128-byte swizzled rows (swizzle.h), one row per
// M (A) or N (B) index, starting at shared-memory address `smem_address` (1024-aligned for the
// tile's first k16 step; step j of a 64-wide atom starts 32·j bytes further, see wgmma.cuh).
// Fields (PTX "matrix descriptor", research/hopper-flash.md §3.2):
//   bits  0-13  start address >> 4
//   bits 16-29  leading byte offset >> 4: unused for swizzled K-major layouts, set to 1 as CUTLASS does
//   bits 32-45  stride byte offset >> 4: 1024 B, from one 8-row group to the next
//   bits 49-51  base offset: 0 (the atom starts on a 1024-byte boundary)
//   bits 62-63  layout type: 1 = 128-byte swizzle
ATTNPROF_HOST_DEVICE constexpr std::uint64_t sw128_kmajor_descriptor(std::uint32_t smem_address) {
  constexpr std::uint64_t kLeadingByteOffsetField = 1;
  constexpr std::uint64_t kStrideByteOffsetField = 1024 >> 4;
  constexpr std::uint64_t kLayoutSwizzle128 = 1;
  return (static_cast<std::uint64_t>(smem_address & 0x3FFFFu) >> 4) | (kLeadingByteOffsetField << 16) |
         (kStrideByteOffsetField << 32) | (kLayoutSwizzle128 << 62);
}

// Descriptor of an MN-major bf16/fp16 B operand (wgmma with tnspB = 1) stored as 128-byte swizzled
// rows, one row per K index, each row holding 64 consecutive N (a 64-column atom); further N come in
// further atoms `atom_bytes` apart. This is V stored [keys × D] for O += P·V (K = keys, N = D).
// Fields (CUTLASS's canonical MN-major SW128 layout, ((8,8,m),(8,k)) : ((1,8,LBO),(64,SBO)) in 16-byte
// units): LBO = the distance between 64-column atoms along N, SBO = 1024 B between 8-row groups along K.
// k16 step j starts 16 rows = 2048 B further.
ATTNPROF_HOST_DEVICE constexpr std::uint64_t sw128_mnmajor_descriptor(std::uint32_t smem_address,
                                                                      std::uint32_t atom_bytes) {
  constexpr std::uint64_t kStrideByteOffsetField = 1024 >> 4;
  constexpr std::uint64_t kLayoutSwizzle128 = 1;
  return (static_cast<std::uint64_t>(smem_address & 0x3FFFFu) >> 4) |
         ((static_cast<std::uint64_t>(atom_bytes >> 4) & 0x3FFFu) << 16) | (kStrideByteOffsetField << 32) |
         (kLayoutSwizzle128 << 62);
}

// The descriptor of the operand `bytes` (a multiple of 16) further on in shared memory, from the
// descriptor of either kind above: one 32-bit add on the address field, which cannot carry past its
// 14 bits while both addresses lie in the 256 KiB shared window. A kernel builds one descriptor a
// tile and steps it by constants, each step one independent add (a masked, shifted and or-ed address
// a step is a chain of four dependent instructions in front of every wgmma).
ATTNPROF_HOST_DEVICE constexpr std::uint64_t advance_descriptor(std::uint64_t descriptor, std::uint32_t bytes) {
  return (descriptor & 0xFFFFFFFF00000000ull) |
         static_cast<std::uint32_t>(static_cast<std::uint32_t>(descriptor) + (bytes >> 4));
}

// The m64nNk16 fp32 accumulator: thread t (0..127) of the warpgroup holds N/2 floats d[v]. Register
// v = 4·j + 2·i + e holds row 16·(t/32) + (t%32)/4 + 8·i, column 8·j + 2·(t%4) + e: warp w owns rows
// 16w..16w+15, and each 8-column block j is the mma.sync m16n8 C fragment of that warp.
ATTNPROF_HOST_DEVICE constexpr int accumulator_row(int thread, int reg) {
  return 16 * (thread / 32) + (thread % 32) / 4 + 8 * ((reg >> 1) & 1);
}
ATTNPROF_HOST_DEVICE constexpr int accumulator_col(int thread, int reg) {
  return 8 * (reg >> 2) + 2 * (thread % 4) + (reg & 1);
}

// The A operand of an RS wgmma (m64nNk16, A from registers): thread t holds 4 registers of two
// 16-bit elements; register r, half h (0 = low) holds row 16·(t/32) + (t%32)/4 + 8·(r%2), column
// 8·(r/2) + 2·(t%4) + h of the 64×16 A tile (PTX "register fragment layout for matrix A").
ATTNPROF_HOST_DEVICE constexpr int rs_a_row(int thread, int reg) { return 16 * (thread / 32) + (thread % 32) / 4 + 8 * (reg % 2); }
ATTNPROF_HOST_DEVICE constexpr int rs_a_col(int thread, int reg, int half) {
  return 8 * (reg / 2) + 2 * (thread % 4) + half;
}

// P = softmax(S) feeds O += P·V without leaving registers: k16 step `step` of P, register r, half h
// is the S accumulator register returned here (same thread), so packing accumulator pairs
// (v, v+1) into one 32-bit register gives the A fragment directly (hopper_layout_test checks that
// the positions agree for every thread, step and register).
ATTNPROF_HOST_DEVICE constexpr int rs_a_source_accumulator(int step, int reg, int half) {
  return 4 * (2 * step + reg / 2) + 2 * (reg % 2) + half;
}

}  // namespace attnprof::cuda::hopper
