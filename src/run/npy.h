#pragma once
// NumPy .npy (format 1.0) output so anyone can check our numbers with numpy.
#include <attnprof/tensor.h>

#include <string>

namespace attnprof {

// Writes a CPU tensor as a C-ordered array of its logical shape (strides are followed, so a bshd
// tensor is written as [B, H, S, D]). fp32 -> <f4, fp64 -> <f8, fp16 -> <f2, bf16 -> <f4 (exact).
void write_npy(const std::string& path, const Tensor& tensor);

}  // namespace attnprof
