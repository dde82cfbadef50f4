#pragma once
// Host entry points of the primitive CUDA kernels (elementwise.cu, softmax.cu). Each launches
// exactly one kernel on `stream`. Tensors arrive as TensorArg: padded to rank 4, strides in elements.
#include <attnprof/dtype.h>
#include <attnprof/tensor.h>
#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>

namespace attnprof::cuda {

struct TensorArg {
  void* ptr = nullptr;
  DType dtype = DType::fp32;
  std::array<std::int64_t, 4> shape{1, 1, 1, 1};
  std::array<std::int64_t, 4> stride{0, 0, 0, 1};
  std::int64_t numel() const { return shape[0] * shape[1] * shape[2] * shape[3]; }
};
TensorArg make_arg(const Tensor& tensor);  // leading dims padded with size 1 (stride 0)

void launch_fill(const TensorArg& dst, double value, cudaStream_t stream);
void launch_convert(const TensorArg& dst, const TensorArg& src, cudaStream_t stream);
void launch_mul_scalar(const TensorArg& dst, const TensorArg& src, double scalar, cudaStream_t stream);
void launch_add(const TensorArg& dst, const TensorArg& a, const TensorArg& b, cudaStream_t stream);
void launch_masked_fill(const TensorArg& dst, const TensorArg& src, const TensorArg& mask, double value,
                        cudaStream_t stream);
void launch_where(const TensorArg& dst, const TensorArg& condition, const TensorArg& if_true,
                  const TensorArg& if_false, cudaStream_t stream);
void launch_logical_not(const TensorArg& dst, const TensorArg& src, cudaStream_t stream);
void launch_isneginf(const TensorArg& dst, const TensorArg& src, cudaStream_t stream);
void launch_triangle(const TensorArg& dst, const TensorArg& src, std::int64_t diagonal, bool lower,
                     cudaStream_t stream);
void launch_all_lastdim(const TensorArg& dst, const TensorArg& src, cudaStream_t stream);
void launch_softmax_lastdim(const TensorArg& dst, const TensorArg& src, cudaStream_t stream);
// causal: column j of query row i is kept iff j <= i + causal_offset; a row keeping none gives zeros.
void launch_scale_mask_softmax(const TensorArg& dst, const TensorArg& src, float scale, bool causal,
                               std::int64_t causal_offset, cudaStream_t stream);
// dst = scale · probs ⊙ (grad − rowsum(grad ⊙ probs)) over the last dim; dst may alias grad.
void launch_softmax_backward(const TensorArg& dst, const TensorArg& grad, const TensorArg& probs, float scale,
                             cudaStream_t stream);
// dst [B,G,S,D] = Σ over each group of H/G consecutive heads of src [B,H,S,D], in fp32.
void launch_sum_head_groups(const TensorArg& dst, const TensorArg& src, cudaStream_t stream);

}  // namespace attnprof::cuda
