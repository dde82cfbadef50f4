#pragma once
// Rank ≤ 4 tensors seen as [n0, n1, n2, n3] with element strides (stride 0 = broadcast), walked
// row by row over the last dim. Rows are loaded into fp32 (or byte, for bool) buffers, computed
// on with the row kernels, and stored back: a contiguous row is one vectorised conversion, any
// other stride an element loop. Rows are spread over OpenMP threads when the tensor is large.
#include <attnprof/error.h>
#include <attnprof/tensor.h>

#include <cstdint>
#include <vector>

namespace attnprof::cpu {

struct Strided4 {
  char* base = nullptr;
  DType dtype = DType::fp32;
  std::int64_t esize = 4;
  std::int64_t shape[4]{1, 1, 1, 1};
  std::int64_t strides[4]{0, 0, 0, 0};

  char* row(std::int64_t i0, std::int64_t i1, std::int64_t i2) const {
    return base + (i0 * strides[0] + i1 * strides[1] + i2 * strides[2]) * esize;
  }
  std::int64_t rows() const { return shape[0] * shape[1] * shape[2]; }
  std::int64_t numel() const { return rows() * shape[3]; }
};

Strided4 strided4(const Tensor& t);  // throws Error for rank > 4
// Throws Error unless every operand has dst's shape (broadcasting is a stride-0 view made by the caller).
void require_same_shape(const char* op, const Tensor& dst, std::initializer_list<const Tensor*> operands);

// Loads one row (n elements, stride s3) as fp32 / as bytes 0|1; stores fp32 / bytes into a row.
void load_row(float* dst, const Strided4& t, const char* row, std::int64_t n);
void load_row_bool(std::uint8_t* dst, const Strided4& t, const char* row, std::int64_t n);
void store_row(const Strided4& t, char* row, const float* src, std::int64_t n);
void store_row_bool(const Strided4& t, char* row, const std::uint8_t* src, std::int64_t n);

// Calls fn(i0, i1, i2) for every row, in parallel when there are enough elements (fn keeps its
// own thread_local row buffers).
template <class Fn>
void for_each_row(const Strided4& shape, Fn&& fn);

bool worth_parallel(std::int64_t elements);

template <class Fn>
void for_each_row(const Strided4& shape, Fn&& fn) {
  const std::int64_t n1 = shape.shape[1], n2 = shape.shape[2];
  const std::int64_t rows = shape.rows();
#pragma omp parallel for schedule(static) if (worth_parallel(shape.numel()) && rows > 1)
  for (std::int64_t r = 0; r < rows; ++r) fn(r / (n1 * n2), (r / n2) % n1, r % n2);
}

}  // namespace attnprof::cpu
