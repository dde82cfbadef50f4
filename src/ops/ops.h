#pragma once
// The ops the variants compose, named after PyTorch's (aten::matmul, aten::masked_fill, ...).
// Each opens a `cpu_op` range, allocates its output through the device allocator, and runs one
// or more backend calls (pieces of device work) on the inputs' device.
#include <attnprof/attention.h>
#include <attnprof/profiler.h>
#include <attnprof/tensor.h>

#include <string_view>
#include <vector>

#include "ops/backend.h"

namespace attnprof::ops {

// [B,H,M,K] · [B,Hb,N,K]ᵀ (transpose_b) or · [B,Hb,K,N] → [B,H,M,N], contiguous, a's dtype.
Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_b, bool allow_tensor_cores = true);
// matmul into a caller's destination (the final GEMM writes the output in its layout).
void matmul_out(Tensor& dst, const Tensor& a, const Tensor& b, bool transpose_b, bool allow_tensor_cores = true);
Tensor mul(const Tensor& src, double scalar);
void mul_out(Tensor& dst, const Tensor& src, double scalar);  // aten::mul into a caller's buffer
void mul_(Tensor& self, double scalar);
void add_(Tensor& self, const Tensor& other);
// Out-of-place: a clone (one copy) then the fill, as PyTorch's masked_fill does.
Tensor masked_fill(const Tensor& src, const Tensor& mask, double value);
void masked_fill_(Tensor& self, const Tensor& mask, double value);
Tensor softmax(const Tensor& src);
// PyTorch's _safe_softmax: softmax, then rows that were all -inf become 0 (isneginf, all, where).
// Takes its input by value and drops it once the fully-masked rows are known, so a caller that
// moves its scores in frees them before the where's output exists (PyTorch's peak: two fp32 S×S
// tensors plus the isneginf mask, not three).
Tensor safe_softmax(Tensor src);
Tensor to(const Tensor& src, DType dtype);      // contiguous copy in another dtype
void copy_(Tensor& dst, const Tensor& src);
Tensor ones_bool(std::int64_t rows, std::int64_t cols, Device device);
Tensor tril(const Tensor& src, std::int64_t diagonal = 0);
Tensor triu(const Tensor& src, std::int64_t diagonal = 0);
Tensor logical_not(const Tensor& src);
Tensor zeros_like(const Tensor& src, DType dtype);
// In place on the scores (dst aliases src), as torch.compile's kernel reuses their buffer.
// causal_offset: AttentionSpec::causal_offset() (row i keeps columns j <= i + offset); a row that
// keeps nothing gives zeros.
void scale_mask_softmax_(Tensor& self, double scale, bool causal, std::int64_t causal_offset = 0);

// Single-kernel attention into out (aten::scaled_dot_product_attention with the flash / efficient
// backend). lse, when given, is fp32 [B, H, Sq] and receives each row's natural-log log-sum-exp.
void flash_attention_out(const AttentionSpec& spec, Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v,
                         Tensor* lse = nullptr);
void efficient_attention_out(const AttentionSpec& spec, Tensor& out, const Tensor& q, const Tensor& k,
                             const Tensor& v, Tensor* lse = nullptr);

// Their backward (FlashAttention-2: Δ = rowsum(dO ⊙ O), then dQ, dK, dV with the scores recomputed
// from q, k and the saved lse) into dq [B,H,Sq,D], dk and dv [B,Hkv,Sk,D], each in the spec's
// dtype (any strides). out and lse are the forward's (lse: fp32 [B,H,Sq], natural log). GQA sums
// dK/dV over the query heads of each group; rows that saw no key contribute nothing (dq = 0).
void flash_attention_backward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& out, const Tensor& lse, const Tensor& dout, Tensor& dq, Tensor& dk,
                              Tensor& dv);
void efficient_attention_backward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& out, const Tensor& lse, const Tensor& dout, Tensor& dq, Tensor& dk,
                                  Tensor& dv);
// Bytes that backward allocates beyond its inputs and gradients, on the spec's device (the default
// FlashAttention-2 estimate where the device has no backend).
std::int64_t fused_backward_workspace_bytes(const AttentionSpec& spec, bool flash);

// A stride-0 view of `small` (the trailing dims of `like`) broadcast to like's shape.
Tensor broadcast_to(const Tensor& small, const std::vector<std::int64_t>& shape);

// ---- The backward's ops (ops_backward.cpp), named as PyTorch's autograd runs them. ----

// One autograd node of a backward: the two nested `cpu_op` ranges torch.profiler shows for it,
// "autograd::engine::evaluate_function: <node>" around "<node>" (node: "BmmBackward0", ...).
class AutogradNode {
 public:
  explicit AutogradNode(std::string_view node);
  AutogradNode(const AutogradNode&) = delete;
  AutogradNode& operator=(const AutogradNode&) = delete;

 private:
  profiler::Range evaluate_;
  profiler::Range node_;
};

// The last two dims swapped, a view (aten::transpose does no work).
Tensor transpose_last2(const Tensor& src);
// aten::bmm, as the backward of a matmul calls it: as matmul (a may be a transposed view).
Tensor bmm(const Tensor& a, const Tensor& b, bool transpose_b, bool allow_tensor_cores = true);
void bmm_out(Tensor& dst, const Tensor& a, const Tensor& b, bool transpose_b, bool allow_tensor_cores = true);
// aten::_softmax_backward_data: grad_in = probs ⊙ (grad − rowsum(grad ⊙ probs)), a new tensor.
Tensor softmax_backward_data(const Tensor& grad, const Tensor& probs);
// torch.compile's one kernel for the backward of scale → mask → softmax: grad becomes
// scale · probs ⊙ (grad − rowsum(grad ⊙ probs)) in place (masked keys have probability 0).
void scale_mask_softmax_backward_(Tensor& grad, const Tensor& probs, double scale);
// aten::sum over the groups of query heads that share a key/value head (the backward of GQA's
// repeat_interleave): dst [B,Hkv,S,D] from src [B,H,S,D].
void sum_head_groups_out(Tensor& dst, const Tensor& src);

}  // namespace attnprof::ops
