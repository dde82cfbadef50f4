#pragma once
// Layout checks of device tensors. Whether two views can be copied as one block of bytes: same
// shape, same strides, and dense (the elements fill exactly numel slots in some dim order, as a
// bshd view of a [B,S,H,D] buffer); the fused kernels' row alignment.
#include <attnprof/error.h>
#include <attnprof/tensor.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace attnprof::cuda {

inline bool is_dense(const Tensor& t) {
  std::vector<std::pair<std::int64_t, std::int64_t>> dims;  // (stride, size), size-1 dims ignored
  for (int d = 0; d < t.rank(); ++d)
    if (t.size(d) != 1) dims.emplace_back(t.stride(d), t.size(d));
  std::sort(dims.begin(), dims.end());
  std::int64_t expected = 1;
  for (auto [stride, size] : dims) {
    if (stride != expected) return false;
    expected *= size;
  }
  return true;
}

inline bool copyable_as_bytes(const Tensor& dst, const Tensor& src) {
  return dst.dtype() == src.dtype() && dst.shape() == src.shape() && dst.strides() == src.strides() && is_dense(dst);
}

// Whether every row ([b, h, s, :]) of a rank-4 tensor of 2-byte elements starts 16-byte aligned, as
// cp.async's 16-byte chunks need: the base address and the strides of dims 0..2 (multiples of 8).
inline bool rows_16_byte_aligned(const Tensor& t) {
  return reinterpret_cast<std::uintptr_t>(t.raw()) % 16 == 0 && t.stride(0) % 8 == 0 && t.stride(1) % 8 == 0 &&
         t.stride(2) % 8 == 0;
}

// Error ("<who>: <tensor> needs unit stride in the head dim" / "is not 16-byte aligned in every
// row") unless every tensor has both, as the fused kernels' cp.async loads need.
inline void check_fused_rows(const std::string& who, std::initializer_list<const Tensor*> tensors) {
  for (const Tensor* t : tensors) {
    if (t->stride(3) != 1) throw Error(who + ": " + t->describe() + " needs unit stride in the head dim");
    if (!rows_16_byte_aligned(*t)) throw Error(who + ": " + t->describe() + " is not 16-byte aligned in every row");
  }
}

// Whether t can hold one fp32 value per query row: contiguous fp32 with `rows` elements (the LSE, Δ).
inline bool is_row_stats(const Tensor& t, std::int64_t rows) {
  return t.dtype() == DType::fp32 && t.is_contiguous() && t.numel() == rows;
}

}  // namespace attnprof::cuda
