#pragma once
// Helpers for the GPU tests: skip without a device (with the reason), move tensors between host
// and device through the backend, read any element as double, and fp64 references.
#include <attnprof/dtype.h>
#include <attnprof/tensor.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "cuda/cuda_backend.h"

#define ATTNPROF_REQUIRE_GPU()                                                       \
  do {                                                                               \
    if (auto attnprof_why_ = ::attnprof::cuda::device_unavailable_reason())          \
      GTEST_SKIP() << "needs a CUDA device: " << *attnprof_why_;                     \
  } while (0)

namespace attnprof::cuda::gpu_testing {

inline ops::Backend& gpu() { return cuda_backend(); }

inline double get(const Tensor& t, std::int64_t linear_offset) {
  const char* base = static_cast<const char*>(t.raw());
  switch (t.dtype()) {
    case DType::bf16: {
      bf16 v;
      std::memcpy(&v, base + linear_offset * 2, 2);
      return bf16_to_float(v);
    }
    case DType::fp16: {
      fp16 v;
      std::memcpy(&v, base + linear_offset * 2, 2);
      return fp16_to_float(v);
    }
    case DType::fp32: return reinterpret_cast<const float*>(base)[linear_offset];
    case DType::fp64: return reinterpret_cast<const double*>(base)[linear_offset];
    case DType::boolean: return static_cast<const std::uint8_t*>(t.raw())[linear_offset];
    case DType::int32: return reinterpret_cast<const std::int32_t*>(base)[linear_offset];
  }
  return 0.0;
}

inline void set(Tensor& t, std::int64_t linear_offset, double value) {
  char* base = static_cast<char*>(t.raw());
  switch (t.dtype()) {
    case DType::bf16: {
      bf16 v = float_to_bf16(static_cast<float>(value));
      std::memcpy(base + linear_offset * 2, &v, 2);
      return;
    }
    case DType::fp16: {
      fp16 v = float_to_fp16(static_cast<float>(value));
      std::memcpy(base + linear_offset * 2, &v, 2);
      return;
    }
    case DType::fp32: reinterpret_cast<float*>(base)[linear_offset] = static_cast<float>(value); return;
    case DType::fp64: reinterpret_cast<double*>(base)[linear_offset] = value; return;
    case DType::boolean: static_cast<std::uint8_t*>(t.raw())[linear_offset] = value != 0.0; return;
    case DType::int32: reinterpret_cast<std::int32_t*>(base)[linear_offset] = static_cast<std::int32_t>(value); return;
  }
}

// Offset of a rank-4 index in a (possibly strided) tensor.
inline std::int64_t offset4(const Tensor& t, std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d) {
  return a * t.stride(0) + b * t.stride(1) + c * t.stride(2) + d * t.stride(3);
}

// A host tensor of random values (normal, or 0/1 for bool) in a fresh contiguous allocation.
inline Tensor random_host(std::vector<std::int64_t> shape, DType dtype, std::uint64_t seed) {
  Tensor t = Tensor::empty(std::move(shape), dtype, Device::cpu);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::bernoulli_distribution coin(0.3);
  for (std::int64_t i = 0; i < t.numel(); ++i) set(t, i, dtype == DType::boolean ? (coin(rng) ? 1.0 : 0.0) : normal(rng));
  return t;
}

inline Tensor to_device(const Tensor& host) {
  Tensor dev = Tensor::empty(host.shape(), host.dtype(), Device::cuda);
  gpu().copy(dev, host);
  return dev;
}

// A contiguous host copy of any device tensor (strided views are made contiguous on the device first).
inline Tensor to_host(const Tensor& dev) {
  Tensor contiguous = dev;
  if (!dev.is_contiguous()) {
    contiguous = Tensor::empty(dev.shape(), dev.dtype(), Device::cuda);
    gpu().copy(contiguous, dev);
  }
  Tensor host = Tensor::empty(dev.shape(), dev.dtype(), Device::cpu);
  gpu().copy(host, contiguous);
  return host;
}

// Fills a device tensor's whole storage span with NaN (bf16/fp16/fp32), so unwritten elements show.
inline void poison(Tensor& dev) {
  Tensor host = Tensor::empty(dev.shape(), dev.dtype(), Device::cpu);
  for (std::int64_t i = 0; i < host.numel(); ++i) set(host, i, std::nan(""));
  Tensor contiguous = Tensor::empty(dev.shape(), dev.dtype(), Device::cuda);
  gpu().copy(contiguous, host);
  gpu().copy(dev, contiguous);
}

}  // namespace attnprof::cuda::gpu_testing
