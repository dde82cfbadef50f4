#pragma once
// Row softmaxes over the last dim, in fp32 whatever the storage dtype, exp from the exp2 polynomial.
#include <attnprof/tensor.h>

namespace attnprof::cpu::kernels {

// A row of all −inf gives NaN, as PyTorch's softmax (max −inf, then (−inf) − (−inf)).
void softmax_lastdim(Tensor& dst, const Tensor& src);
// softmax(scale·src) with keys past the query row masked (top-left causal): torch.compile's one
// kernel. Masked entries become 0; a row with no visible key (impossible top-left) gives 0.
void scale_mask_softmax(Tensor& dst, const Tensor& src, double scale, bool causal);

}  // namespace attnprof::cpu::kernels
