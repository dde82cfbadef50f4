#pragma once
// What the fp64 references (reference.cpp for the forward, reference_backward.cpp for the
// gradients) share: one element of any tensor as a double, one row of one, the CPU-tensor check,
// and the fp64 copy of one (b, kv head)'s K and V.
#include <attnprof/attention.h>
#include <attnprof/tensor.h>

#include <cstdint>
#include <vector>

namespace attnprof::variants::detail {

// t[index] (index has t.rank() entries, any strides, any dtype) as a double.
double element(const Tensor& t, const std::int64_t* index);
// Throws Error "reference: <what> must be a CPU tensor" for a device tensor.
void require_cpu(const Tensor& t, const char* what);

// Row i of head h of batch b of a rank-4 tensor, as fp64.
inline void load_row(const Tensor& t, std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t D, double* row) {
  for (std::int64_t d = 0; d < D; ++d) {
    const std::int64_t idx[4]{b, h, i, d};
    row[d] = element(t, idx);
  }
}

// K and V of one (b, kv head) in fp64, converted once per thread and reused while rows of heads
// sharing it are processed (rows are visited in (b, h, i) order).
struct HeadCache {
  std::int64_t b = -1, hk = -1;
  std::vector<double> k, v;  // [Sk][D]
  void load(const AttentionSpec& spec, const Tensor& kt, const Tensor& vt, std::int64_t nb, std::int64_t nhk) {
    if (nb == b && nhk == hk) return;
    b = nb;
    hk = nhk;
    const std::int64_t D = spec.head_dim;
    k.resize(static_cast<std::size_t>(spec.seq_k * D));
    v.resize(static_cast<std::size_t>(spec.seq_k * D));
    for (std::int64_t j = 0; j < spec.seq_k; ++j) {
      for (std::int64_t d = 0; d < D; ++d) {
        const std::int64_t idx[4]{b, hk, j, d};
        k[static_cast<std::size_t>(j * D + d)] = element(kt, idx);
        v[static_cast<std::size_t>(j * D + d)] = element(vt, idx);
      }
    }
  }
};

}  // namespace attnprof::variants::detail
