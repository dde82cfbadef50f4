#pragma once
// The wgmma.mma_async instructions the sm_90a flash kernel issues (the operand lists are long and
// regular; each macro is one PTX instruction, its text printed by scripts/wgmma_instructions.py).
// Accumulator layout and the fence/commit/wait protocol: wgmma.cuh. All are issued by the 128
// threads of one warpgroup.
//
//   wgmma_ss_m64nNk16<N, T>(d, a_desc, b_desc, scale_d): d[N/2] (+)= A·Bᵀ, A 64×16 and B N×16 both
//       K-major in shared memory (tnspA = tnspB = 0): S = Q·Kᵀ over a key tile of N = 80, 112 or 128
//       keys; the backward's Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ over N = 64 query rows. scale_d 0 drops the old d.
//   wgmma_ss_m64nNk16_tb<N, T>(d, a_desc, b_desc, scale_d): d[N/2] (+)= A·B, A 64×16 K-major and B
//       16×N MN-major (tnspB = 1), both in shared memory: the backward's dQ = dS·K over N = 64 or
//       128, the kernel head dim.
//   wgmma_rs_m64nNk16_tb<N, T>(d, a, b_desc): d[N/2] += A·B, A 64×16 from registers (a[4] per
//       thread, the m16n8k16 A fragment of the thread's warp: wgmma_layout.h), B 16×N in shared
//       memory MN-major (tnspB = 1, N contiguous): O += P·V with V stored [keys × D], N = D of 64,
//       96, 128, 192 or 256 (96 reads the first half of V's second 64-column atom). N = 72: V at D 64
//       plus 8 columns of ones, whose accumulators collect P's row sums (flash's tile-counter kernel
//       at D 64).
//   wgmma_rs_m64nNk16<N, T>(d, a, b_desc, scale_d): d[N/2] (+)= A·Bᵀ, A 64×16 from registers (as
//       above), B N×16 K-major in shared memory (tnspB = 0): the backward's Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ
//       at D 64 over N = 64 query rows, with K and V held in registers. scale_d 0 drops the old d.
// T is __nv_bfloat16 or __half (fp32 accumulation either way). Each instruction's operand list is
// written once, in a macro taking the PTX type ("bf16" or "f16"), which the template picks.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "cuda/hopper/host_device.h"

namespace attnprof::cuda::hopper {

#define ATTNPROF_WGMMA_SS_M64N64K16(PTX_TYPE)                                                                        \
  asm volatile(                                                                                                      \
      "{\n"                                                                                                          \
      ".reg .pred p;\n"                                                                                              \
      "setp.ne.b32 p, %34, 0;\n"                                                                                     \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." PTX_TYPE "." PTX_TYPE " "                                        \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                      \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "                            \
      "%32, %33, p, 1, 1, 0, 0;\n"                                                                                   \
      "}\n"                                                                                                          \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),              \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),        \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),      \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])       \
      : "l"(a_desc), "l"(b_desc), "r"(scale_d)                                                                       \
      : "memory")

#define ATTNPROF_WGMMA_SS_M64N80K16(PTX_TYPE)                                                                        \
  asm volatile(                                                                                                      \
      "{\n"                                                                                                          \
      ".reg .pred p;\n"                                                                                              \
      "setp.ne.b32 p, %42, 0;\n"                                                                                     \
      "wgmma.mma_async.sync.aligned.m64n80k16.f32." PTX_TYPE "." PTX_TYPE " "                                        \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                      \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                             \
      "%32, %33, %34, %35, %36, %37, %38, %39}, "                                                                    \
      "%40, %41, p, 1, 1, 0, 0;\n"                                                                                   \
      "}\n"                                                                                                          \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),              \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),        \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),      \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),      \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39])       \
      : "l"(a_desc), "l"(b_desc), "r"(scale_d)                                                                       \
      : "memory")

#define ATTNPROF_WGMMA_SS_M64N112K16(PTX_TYPE)                                                                       \
  asm volatile(                                                                                                      \
      "{\n"                                                                                                          \
      ".reg .pred p;\n"                                                                                              \
      "setp.ne.b32 p, %58, 0;\n"                                                                                     \
      "wgmma.mma_async.sync.aligned.m64n112k16.f32." PTX_TYPE "." PTX_TYPE " "                                       \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                      \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                             \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                             \
      "%48, %49, %50, %51, %52, %53, %54, %55}, "                                                                    \
      "%56, %57, p, 1, 1, 0, 0;\n"                                                                                   \
      "}\n"                                                                                                          \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),              \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),        \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),      \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),      \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),      \
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),      \
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55])       \
      : "l"(a_desc), "l"(b_desc), "r"(scale_d)                                                                       \
      : "memory")

#define ATTNPROF_WGMMA_SS_M64N128K16(PTX_TYPE)                                                                       \
  asm volatile(                                                                                                      \
      "{\n"                                                                                                          \
      ".reg .pred p;\n"                                                                                              \
      "setp.ne.b32 p, %66, 0;\n"                                                                                     \
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." PTX_TYPE "." PTX_TYPE " "                                       \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                      \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                             \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                             \
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "                            \
      "%64, %65, p, 1, 1, 0, 0;\n"                                                                                   \
      "}\n"                                                                                                          \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),              \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),        \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),      \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),      \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),      \
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),      \
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),      \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])       \
      : "l"(a_desc), "l"(b_desc), "r"(scale_d)                                                                       \
      : "memory")

#define ATTNPROF_WGMMA_RS_M64N64K16_TB(PTX_TYPE)                                                                     \
  asm volatile(                                                                                                      \
      "{\n"                                                                                                          \
      ".reg .pred p;\n"                                                                                              \
      "setp.ne.b32 p, %37, 0;\n"                                                                                     \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." PTX_TYPE "." PTX_TYPE " "                                        \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                      \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "                            \
      "{%32, %33, %34, %35}, %36, p, 1, 1, 1;\n"                                                                     \
      "}\n"                                                                                                          \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),              \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),        \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),      \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])       \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(1)                                              \
      : "memory")

#define ATTNPROF_WGMMA_RS_M64N72K16_TB(PTX_TYPE)                                                                     \
  asm volatile(                                                                                                      \
      "{\n"                                                                                                          \
      ".reg .pred p;\n"                                                                                              \
      "setp.ne.b32 p, %41, 0;\n"                                                                                     \
      "wgmma.mma_async.sync.aligned.m64n72k16.f32." PTX_TYPE "." PTX_TYPE " "                                        \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                      \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                             \
      "%32, %33, %34, %35}, "                                                                                        \
      "{%36, %37, %38, %39}, %40, p, 1, 1, 1;\n"                                                                     \
      "}\n"                                                                                                          \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),              \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),        \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),      \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),      \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35])                                                           \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(1)                                              \
      : "memory")

#define ATTNPROF_WGMMA_RS_M64N96K16_TB(PTX_TYPE)                                                                     \
  asm volatile(                                                                                                      \
      "{\n"                                                                                                          \
      ".reg .pred p;\n"                                                                                              \
      "setp.ne.b32 p, %53, 0;\n"                                                                                     \
      "wgmma.mma_async.sync.aligned.m64n96k16.f32." PTX_TYPE "." PTX_TYPE " "                                        \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                      \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                             \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}, "                            \
      "{%48, %49, %50, %51}, %52, p, 1, 1, 1;\n"                                                                     \
      "}\n"                                                                                                          \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),              \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),        \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),      \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),      \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),      \
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])       \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(1)                                              \
      : "memory")

#define ATTNPROF_WGMMA_RS_M64N128K16_TB(PTX_TYPE)                                                                    \
  asm volatile(                                                                                                      \
      "{\n"                                                                                                          \
      ".reg .pred p;\n"                                                                                              \
      "setp.ne.b32 p, %69, 0;\n"                                                                                     \
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." PTX_TYPE "." PTX_TYPE " "                                       \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                      \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                             \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                             \
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "                            \
      "{%64, %65, %66, %67}, %68, p, 1, 1, 1;\n"                                                                     \
      "}\n"                                                                                                          \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),              \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),        \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),      \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),      \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),      \
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),      \
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),      \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])       \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(1)                                              \
      : "memory")

#define ATTNPROF_WGMMA_RS_M64N192K16_TB(PTX_TYPE)                                                                    \
  asm volatile(                                                                                                      \
      "{\n"                                                                                                          \
      ".reg .pred p;\n"                                                                                              \
      "setp.ne.b32 p, %101, 0;\n"                                                                                    \
      "wgmma.mma_async.sync.aligned.m64n192k16.f32." PTX_TYPE "." PTX_TYPE " "                                       \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                      \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                             \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                             \
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "                             \
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "                             \
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, "                            \
      "{%96, %97, %98, %99}, %100, p, 1, 1, 1;\n"                                                                    \
      "}\n"                                                                                                          \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),              \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),        \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),      \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),      \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),      \
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),      \
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),      \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),      \
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),      \
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),      \
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),      \
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])       \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(1)                                              \
      : "memory")

#define ATTNPROF_WGMMA_RS_M64N256K16_TB(PTX_TYPE)                                                                    \
  asm volatile(                                                                                                      \
      "{\n"                                                                                                          \
      ".reg .pred p;\n"                                                                                              \
      "setp.ne.b32 p, %133, 0;\n"                                                                                    \
      "wgmma.mma_async.sync.aligned.m64n256k16.f32." PTX_TYPE "." PTX_TYPE " "                                       \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                      \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                             \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                             \
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "                             \
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "                             \
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "                             \
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "                 \
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "            \
      "{%128, %129, %130, %131}, %132, p, 1, 1, 1;\n"                                                                \
      "}\n"                                                                                                          \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),              \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),        \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),      \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),      \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),      \
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),      \
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),      \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),      \
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),      \
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),      \
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),      \
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),      \
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),  \
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),\
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),\
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])\
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(1)                                              \
      : "memory")

#define ATTNPROF_WGMMA_SS_M64N64K16_TB(PTX_TYPE)                                                                     \
  asm volatile(                                                                                                      \
      "{\n"                                                                                                          \
      ".reg .pred p;\n"                                                                                              \
      "setp.ne.b32 p, %34, 0;\n"                                                                                     \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." PTX_TYPE "." PTX_TYPE " "                                        \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                      \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "                            \
      "%32, %33, p, 1, 1, 0, 1;\n"                                                                                   \
      "}\n"                                                                                                          \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),              \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),        \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),      \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])       \
      : "l"(a_desc), "l"(b_desc), "r"(scale_d)                                                                       \
      : "memory")

#define ATTNPROF_WGMMA_SS_M64N128K16_TB(PTX_TYPE)                                                                    \
  asm volatile(                                                                                                      \
      "{\n"                                                                                                          \
      ".reg .pred p;\n"                                                                                              \
      "setp.ne.b32 p, %66, 0;\n"                                                                                     \
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." PTX_TYPE "." PTX_TYPE " "                                       \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                      \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                             \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                             \
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "                            \
      "%64, %65, p, 1, 1, 0, 1;\n"                                                                                   \
      "}\n"                                                                                                          \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),              \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),        \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),      \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),      \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),      \
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),      \
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),      \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])       \
      : "l"(a_desc), "l"(b_desc), "r"(scale_d)                                                                       \
      : "memory")

#define ATTNPROF_WGMMA_RS_M64N64K16(PTX_TYPE)                                                                        \
  asm volatile(                                                                                                      \
      "{\n"                                                                                                          \
      ".reg .pred p;\n"                                                                                              \
      "setp.ne.b32 p, %37, 0;\n"                                                                                     \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." PTX_TYPE "." PTX_TYPE " "                                        \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                      \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "                            \
      "{%32, %33, %34, %35}, %36, p, 1, 1, 0;\n"                                                                     \
      "}\n"                                                                                                          \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),              \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),        \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),      \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])       \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(scale_d)                                        \
      : "memory")

// The instruction for element type T: PTX type f16 for __half, bf16 for __nv_bfloat16.
#define ATTNPROF_WGMMA_TYPED(INSTRUCTION)    \
  if constexpr (std::is_same_v<T, __half>) \
    INSTRUCTION("f16");                    \
  else                                     \
    INSTRUCTION("bf16")

template <int N, class T>
__device__ __forceinline__ void wgmma_ss_m64nNk16(float (&d)[N / 2], std::uint64_t a_desc, std::uint64_t b_desc,
                                                  int scale_d) {
  static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>, "bf16 or fp16 operands");
  static_assert(N == 64 || N == 80 || N == 112 || N == 128,
                "written for key tiles of 80, 112 or 128 (S = Q·Kᵀ) and 64 query rows (the backward's Sᵀ, dPᵀ)");
#if ATTNPROF_SM90A
  if constexpr (N == 64) {
    ATTNPROF_WGMMA_TYPED(ATTNPROF_WGMMA_SS_M64N64K16);
  } else if constexpr (N == 80) {
    ATTNPROF_WGMMA_TYPED(ATTNPROF_WGMMA_SS_M64N80K16);
  } else if constexpr (N == 112) {
    ATTNPROF_WGMMA_TYPED(ATTNPROF_WGMMA_SS_M64N112K16);
  } else {
    ATTNPROF_WGMMA_TYPED(ATTNPROF_WGMMA_SS_M64N128K16);
  }
#else
  (void)d, (void)a_desc, (void)b_desc, (void)scale_d;
  __trap();
#endif
}

template <int N, class T>
__device__ __forceinline__ void wgmma_rs_m64nNk16_tb(float (&d)[N / 2], const std::uint32_t (&a)[4],
                                                     std::uint64_t b_desc) {
  static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>, "bf16 or fp16 operands");
  static_assert(N == 64 || N == 72 || N == 96 || N == 128 || N == 192 || N == 256,
                "O += P·V is written for N = D of 64, 96, 128, 192, 256 (72: D 64 and the ones column)");
#if ATTNPROF_SM90A
  if constexpr (N == 64) {
    ATTNPROF_WGMMA_TYPED(ATTNPROF_WGMMA_RS_M64N64K16_TB);
  } else if constexpr (N == 72) {
    ATTNPROF_WGMMA_TYPED(ATTNPROF_WGMMA_RS_M64N72K16_TB);
  } else if constexpr (N == 96) {
    ATTNPROF_WGMMA_TYPED(ATTNPROF_WGMMA_RS_M64N96K16_TB);
  } else if constexpr (N == 128) {
    ATTNPROF_WGMMA_TYPED(ATTNPROF_WGMMA_RS_M64N128K16_TB);
  } else if constexpr (N == 192) {
    ATTNPROF_WGMMA_TYPED(ATTNPROF_WGMMA_RS_M64N192K16_TB);
  } else {
    ATTNPROF_WGMMA_TYPED(ATTNPROF_WGMMA_RS_M64N256K16_TB);
  }
#else
  (void)d, (void)a, (void)b_desc;
  __trap();
#endif
}

template <int N, class T>
__device__ __forceinline__ void wgmma_rs_m64nNk16(float (&d)[N / 2], const std::uint32_t (&a)[4], std::uint64_t b_desc,
                                                  int scale_d) {
  static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>, "bf16 or fp16 operands");
  static_assert(N == 64, "written for the backward's 64 query rows (Sᵀ, dPᵀ at D 64)");
#if ATTNPROF_SM90A
  ATTNPROF_WGMMA_TYPED(ATTNPROF_WGMMA_RS_M64N64K16);
#else
  (void)d, (void)a, (void)b_desc, (void)scale_d;
  __trap();
#endif
}

template <int N, class T>
__device__ __forceinline__ void wgmma_ss_m64nNk16_tb(float (&d)[N / 2], std::uint64_t a_desc, std::uint64_t b_desc,
                                                     int scale_d) {
  static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>, "bf16 or fp16 operands");
  static_assert(N == 64 || N == 128, "dQ = dS·K over the backward's kernel head dims");
#if ATTNPROF_SM90A
  if constexpr (N == 64) {
    ATTNPROF_WGMMA_TYPED(ATTNPROF_WGMMA_SS_M64N64K16_TB);
  } else {
    ATTNPROF_WGMMA_TYPED(ATTNPROF_WGMMA_SS_M64N128K16_TB);
  }
#else
  (void)d, (void)a_desc, (void)b_desc, (void)scale_d;
  __trap();
#endif
}

#undef ATTNPROF_WGMMA_TYPED
#undef ATTNPROF_WGMMA_SS_M64N64K16
#undef ATTNPROF_WGMMA_SS_M64N64K16_TB
#undef ATTNPROF_WGMMA_SS_M64N128K16_TB
#undef ATTNPROF_WGMMA_SS_M64N80K16
#undef ATTNPROF_WGMMA_SS_M64N112K16
#undef ATTNPROF_WGMMA_SS_M64N128K16
#undef ATTNPROF_WGMMA_RS_M64N64K16
#undef ATTNPROF_WGMMA_RS_M64N64K16_TB
#undef ATTNPROF_WGMMA_RS_M64N72K16_TB
#undef ATTNPROF_WGMMA_RS_M64N96K16_TB
#undef ATTNPROF_WGMMA_RS_M64N128K16_TB
#undef ATTNPROF_WGMMA_RS_M64N192K16_TB
#undef ATTNPROF_WGMMA_RS_M64N256K16_TB

}  // namespace attnprof::cuda::hopper
