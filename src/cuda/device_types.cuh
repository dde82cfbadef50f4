#pragma once
// Device-side helpers shared by the primitive kernels: element conversion to/from fp32,
// 16-byte vector packs, and a 32-bit fast divmod for index decomposition.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace attnprof::cuda {

using bool_t = std::uint8_t;  // attnprof's DType::boolean is one byte, 0 or 1

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(bool_t x) { return x ? 1.0f : 0.0f; }

template <class T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) { return x; }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <>
__device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ bool_t from_float<bool_t>(float x) { return x != 0.0f ? 1 : 0; }

// V elements of T moved as one access (16 bytes when sizeof(T)·V == 16).
template <class T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

template <class T, int V>
__device__ __forceinline__ void load_floats(float (&dst)[V], const T* src) {
  Pack<T, V> p = *reinterpret_cast<const Pack<T, V>*>(src);
#pragma unroll
  for (int i = 0; i < V; ++i) dst[i] = to_float(p.v[i]);
}

template <class T, int V>
__device__ __forceinline__ void store_floats(T* dst, const float (&src)[V]) {
  Pack<T, V> p;
#pragma unroll
  for (int i = 0; i < V; ++i) p.v[i] = from_float<T>(src[i]);
  *reinterpret_cast<Pack<T, V>*>(dst) = p;
}

// n / d and n % d for 32-bit n with a divisor fixed at launch (Granlund–Montgomery):
// quotient = umulhi(n, multiplier) >> shift, no hardware divide in the inner loop.
struct FastDivmod {
  std::uint32_t divisor = 1, multiplier = 0, shift = 0;
  FastDivmod() = default;
  __host__ explicit FastDivmod(std::uint32_t d) : divisor(d) {
    for (shift = 0; shift < 32; ++shift)
      if ((1ull << shift) >= d) break;
    std::uint64_t one = 1;
    multiplier = static_cast<std::uint32_t>(((one << 32) * ((one << shift) - d)) / d + 1);
  }
  __device__ __forceinline__ void divmod(std::uint32_t& quotient, std::uint32_t& remainder, std::uint32_t n) const {
    std::uint32_t t = __umulhi(n, multiplier);
    quotient = (t + ((n - t) >> 1)) >> (shift == 0 ? 0 : shift - 1);
    if (divisor == 1) quotient = n;
    remainder = n - quotient * divisor;
  }
};

}  // namespace attnprof::cuda
