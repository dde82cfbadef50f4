#pragma once
// Row softmaxes over the last dim, in fp32 whatever the storage dtype, exp from the exp2 polynomial.
#include <attnprof/tensor.h>

#include <cstdint>

namespace attnprof::cpu::kernels {

// A row of all −inf gives NaN, as PyTorch's softmax (max −inf, then (−inf) − (−inf)).
void softmax_lastdim(Tensor& dst, const Tensor& src);
// softmax(scale·src) with, when causal, the keys j > i + causal_offset of query row i masked
// (offset 0: top-left; Sk − Sq: bottom-right): torch.compile's one kernel. Masked entries become
// 0; a row with no visible key (bottom-right with Sq > Sk) gives 0.
void scale_mask_softmax(Tensor& dst, const Tensor& src, double scale, bool causal, std::int64_t causal_offset);
// The softmax's backward, row by row: dst = scale · probs ⊙ (grad − Σ_j grad_j · probs_j), in fp32
// (PyTorch's _softmax_backward_data with scale 1; torch.compile's fused kernel folds the scores'
// scale in). dst may alias grad. A masked key has probability 0, so its gradient is 0; a row of
// NaN probabilities (naive's fully masked rows) gives NaN, as PyTorch's does.
void softmax_backward(Tensor& dst, const Tensor& grad, const Tensor& probs, double scale);

}  // namespace attnprof::cpu::kernels
