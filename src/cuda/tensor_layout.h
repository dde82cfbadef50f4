#pragma once
// Whether two views can be copied as one block of bytes: same shape, same strides, and dense
// (the elements fill exactly numel slots in some dim order, as a bshd view of a [B,S,H,D] buffer).
#include <attnprof/tensor.h>

#include <algorithm>
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

}  // namespace attnprof::cuda
