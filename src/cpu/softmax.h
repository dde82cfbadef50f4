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

}  // namespace attnprof::cpu::kernels
