#pragma once
// Elementwise CPU kernels over rank ≤ 4 strided tensors of one shape (stride-0 broadcasting).
// Float math runs in fp32 on rows loaded by strided.h; dst may alias a source.
#include <attnprof/tensor.h>

namespace attnprof::cpu::kernels {

void copy(Tensor& dst, const Tensor& src);  // with dtype conversion (RNE to bf16/fp16)
void fill(Tensor& dst, double value);
void mul_scalar(Tensor& dst, const Tensor& src, double scalar);
void add(Tensor& dst, const Tensor& a, const Tensor& b);
void masked_fill(Tensor& dst, const Tensor& src, const Tensor& mask, double value);
void where(Tensor& dst, const Tensor& condition, const Tensor& if_true, const Tensor& if_false);
void logical_not(Tensor& dst, const Tensor& src);
void isneginf(Tensor& dst, const Tensor& src);
// keep (i, j) of the last two dims where j − i ≤ diagonal (lower) / j − i ≥ diagonal (upper), else 0
void triangle(Tensor& dst, const Tensor& src, std::int64_t diagonal, bool upper);
void all_lastdim(Tensor& dst, const Tensor& src);
// dst[b, g] = Σ_{h in group g} src[b, h] over dim 1, the groups of H / G consecutive heads (the
// backward of repeat_interleave(G heads → H)); fp32 accumulation, one rounding into dst.
void sum_head_groups(Tensor& dst, const Tensor& src);

}  // namespace attnprof::cpu::kernels
