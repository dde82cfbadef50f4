// instruction_throughput: results per SM clock of the instructions a flash softmax is made of, on
// the current GPU, to say which pipe bounds it (bench/RESULTS.md, session 5). One CTA of 512
// threads per SM (16 warps, 4 per sub-partition; 120 KiB of shared memory keeps a second CTA
// off), each thread running 8 independent chains of one operation; the SM clock around the loop
// gives cycles, results = threads × iterations × 8.
//   instruction_throughput [--iterations N]
// Rows: ex2.approx (MUFU), cvt.rn.bf16x2.f32 (F2FP), the two chained (one pipe or two?), FFMA,
// and the two replacements flash v9 tried (session 5; both slower, so the kernel dropped them):
// soft_exp2, 2^x on the FMA pipe (Cody-Waite split + a cubic with 8.6e-5 relative error, as
// FlashAttention-4 does on Blackwell), and pack_bf16x2_rn, bf16 rounding by an integer add and a
// byte permute instead of cvt.
#include <attnprof/error.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda/check.h"


namespace {

constexpr int kThreads = 512;
constexpr int kChains = 8;
constexpr int kSharedBytes = 120 * 1024;

__device__ __forceinline__ float mufu_exp2(float x) {
  float y;
  asm volatile("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float cvt_bf16x2(float x) {
  std::uint32_t packed;
  asm volatile("cvt.rn.bf16x2.f32 %0, %1, %1;\n" : "=r"(packed) : "f"(x));
  return __uint_as_float(packed);
}

// 2^x for x < 128: ⌊x⌋ by adding 1.5·2^23 rounding down (its low mantissa bits then hold ⌊x⌋),
// 2^f on [0, 1) by a cubic fitted for the least largest relative error, 2^⌊x⌋ built in the
// exponent field; the NaN-keeping clamp at −127 makes −∞ give 0.
__device__ __forceinline__ float soft_exp2(float x) {
  float clamped, shifted;
  asm("max.NaN.f32 %0, %1, %2;\n" : "=f"(clamped) : "f"(x), "f"(-127.0f));
  asm("add.rm.f32 %0, %1, %2;\n" : "=f"(shifted) : "f"(clamped), "f"(12582912.0f));
  const float whole = __fsub_rn(shifted, 12582912.0f);
  const float f = __fsub_rn(clamped, whole);
  const float two_f = __fmaf_rn(f, __fmaf_rn(f, __fmaf_rn(f, 0.0770642657f, 0.2276480312f), 0.6951161107f), 1.0f);
  return two_f * __uint_as_float((__float_as_uint(shifted) << 23) + 0x3F800000u);
}
// Two floats to bf16 (round to nearest, ties away from zero) packed lo | hi << 16.
__device__ __forceinline__ std::uint32_t pack_bf16x2_rn(float lo, float hi) {
  return __byte_perm(__float_as_uint(lo) + 0x8000u, __float_as_uint(hi) + 0x8000u, 0x7632);
}

struct Ex2 {
  static constexpr const char* kName = "ex2.approx.ftz.f32 (MUFU)";
  __device__ static float step(float x) { return mufu_exp2(x); }
};
struct Cvt {
  static constexpr const char* kName = "cvt.rn.bf16x2.f32 (F2FP)";
  __device__ static float step(float x) { return cvt_bf16x2(x); }
};
struct Ex2ThenCvt {
  static constexpr const char* kName = "ex2 then cvt (per pair)";
  __device__ static float step(float x) { return cvt_bf16x2(mufu_exp2(x)); }
};
struct Ffma {
  static constexpr const char* kName = "fma.rn.f32 (FFMA)";
  __device__ static float step(float x) { return __fmaf_rn(x, 0.999f, 0.001f); }
};
struct SoftExp2 {
  static constexpr const char* kName = "soft_exp2 (FMA pipe)";
  __device__ static float step(float x) { return soft_exp2(-x); }
};
struct IntegerPack {
  static constexpr const char* kName = "pack_bf16x2_rn (IADD+PRMT)";
  __device__ static float step(float x) { return __uint_as_float(pack_bf16x2_rn(x, x)); }
};

template <class Op>
__global__ void __launch_bounds__(kThreads, 1) throughput_kernel(float* sink, long long* cycles, int iterations) {
  extern __shared__ float keep_one_cta_per_sm[];
  float v[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) v[c] = 0.25f + 0.01f * static_cast<float>((threadIdx.x + c) % 50);
  __syncthreads();
  const long long begin = clock64();
  for (int i = 0; i < iterations; ++i)
#pragma unroll
    for (int c = 0; c < kChains; ++c) v[c] = Op::step(v[c]);
  __syncthreads();
  const long long end = clock64();
  float total = 0.0f;
#pragma unroll
  for (int c = 0; c < kChains; ++c) total += v[c];
  keep_one_cta_per_sm[threadIdx.x] = total;
  sink[blockIdx.x * kThreads + threadIdx.x] = keep_one_cta_per_sm[threadIdx.x];
  if (threadIdx.x == 0) cycles[blockIdx.x] = end - begin;
}

template <class Op>
void measure(int sms, int iterations, float* sink, long long* cycles_device) {
  auto kernel = throughput_kernel<Op>;
  ATTNPROF_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSharedBytes));
  kernel<<<sms, kThreads, kSharedBytes>>>(sink, cycles_device, iterations / 10);  // warm-up
  ATTNPROF_CUDA_CHECK(cudaGetLastError());
  kernel<<<sms, kThreads, kSharedBytes>>>(sink, cycles_device, iterations);
  ATTNPROF_CUDA_CHECK(cudaGetLastError());
  ATTNPROF_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<long long> cycles(static_cast<std::size_t>(sms));
  ATTNPROF_CUDA_CHECK(
      cudaMemcpy(cycles.data(), cycles_device, cycles.size() * sizeof(long long), cudaMemcpyDeviceToHost));
  std::sort(cycles.begin(), cycles.end());
  const double median = static_cast<double>(cycles[cycles.size() / 2]);
  const double results = static_cast<double>(kThreads) * iterations * kChains;
  std::printf("%-30s %8.2f results/cycle/SM  %6.2f cycles per warp instruction per sub-partition\n", Op::kName,
              results / median, median / (results / 32.0 / 4.0));
}

void run_all(int iterations) {
  cudaDeviceProp prop{};
  ATTNPROF_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  std::printf("%s, %d SMs, %d threads a CTA, %d chains a thread, %d iterations\n", prop.name, sms, kThreads, kChains,
              iterations);
  float* sink = nullptr;
  long long* cycles = nullptr;
  ATTNPROF_CUDA_CHECK(cudaMalloc(&sink, static_cast<std::size_t>(sms) * kThreads * sizeof(float)));
  ATTNPROF_CUDA_CHECK(cudaMalloc(&cycles, static_cast<std::size_t>(sms) * sizeof(long long)));
  measure<Ex2>(sms, iterations, sink, cycles);
  measure<Cvt>(sms, iterations, sink, cycles);
  measure<Ex2ThenCvt>(sms, iterations, sink, cycles);
  measure<Ffma>(sms, iterations, sink, cycles);
  measure<SoftExp2>(sms, iterations, sink, cycles);
  measure<IntegerPack>(sms, iterations, sink, cycles);
  ATTNPROF_CUDA_CHECK(cudaFree(sink));
  ATTNPROF_CUDA_CHECK(cudaFree(cycles));
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = 4096;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--iterations" && i + 1 < argc) {
      iterations = std::atoi(argv[++i]);
      if (iterations < 10) {
        std::fprintf(stderr, "--iterations %s: allowed an integer >= 10\n", argv[i]);
        return 2;
      }
    } else {
      std::fprintf(stderr, "%s: unknown flag (allowed: --iterations N)\n", a.c_str());
      return 2;
    }
  }
  try {
    run_all(iterations);
  } catch (const attnprof::Error& e) {
    std::fprintf(stderr, "instruction_throughput: %s\n", e.what());
    return 1;
  }
  return 0;
}
