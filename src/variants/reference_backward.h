#pragma once
// The fp64 oracle of the backward: dQ, dK, dV of the loss Σ out·dout, computed in double from the
// stored input values, and the relative errors ‖x − ref‖ / ‖ref‖ of a kernel's gradients.
// CPU tensors (the runner copies device gradients back first).
#include <attnprof/attention.h>
#include <attnprof/tensor.h>

namespace attnprof::variants {

struct ReferenceGradients {
  Tensor dq, dk, dv;
};

// fp64 contiguous [B,H,Sq,D] for dq, [B,KVH,Sk,D] for dk/dv, of out = softmax(scale·q·kᵀ, masked)·v
// with upstream gradient dout ([B,H,Sq,D], any strides and dtype, as q/k/v). GQA sums dK/dV over
// the query heads of a group; causal with spec.causal_offset(); rows that see no key contribute
// nothing (their out is the constant 0, so their dq is 0 too).
ReferenceGradients reference_gradients(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& dout);

struct GradientErrors {
  double dq = 0, dk = 0, dv = 0;
  double worst() const;  // the largest of the three; NaN when any is NaN
};

// ‖x − ref‖ / ‖ref‖ for each of dq, dk, dv (any strides and dtype; NaN when x holds a NaN; the
// absolute ‖x‖ when the reference is all zeros). Throws Error when a gradient's shape is wrong.
GradientErrors check_gradients(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v,
                               const Tensor& dout, const Tensor& dq, const Tensor& dk, const Tensor& dv);

}  // namespace attnprof::variants
