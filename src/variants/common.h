#pragma once
// What the built-in variants share: the refusal every variant makes (dtype, device), and the
// memory arithmetic of their workspace estimates.
#include <attnprof/attention.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/saturating.h"  // the estimates saturate instead of wrapping

namespace attnprof::variants {

// nullopt, or why `variant` cannot run spec: a dtype other than bf16/fp16/fp32, or a device with no
// backend in this build. Names the allowed values.
std::optional<std::string> common_refusal(std::string_view variant, const AttentionSpec& spec);

// The backward refusal of a variant whose backward is a sequence of ops (naive, inplace, math,
// fused): common_refusal's (both backends have the softmax-backward and head-group-sum kernels).
std::optional<std::string> op_sequence_backward_refusal(std::string_view variant, const AttentionSpec& spec);
// Where the backward's GEMM writes the gradient of k or v: `grad` itself (when its dtype is
// `dtype`, and without GQA), else a new [B, H, Sk, D] (GQA: one per query head, as PyTorch's
// repeat_interleave of k and v makes them) of `dtype` on grad's device.
Tensor kv_grad_target(const AttentionSpec& spec, const Tensor& grad, DType dtype);
// With GQA, the backward of that repeat_interleave (ExpandBackward0: aten::sum over each group of
// query heads) from `expanded` into `grad`; nothing without GQA (the GEMM wrote grad itself).
void sum_kv_grad(const AttentionSpec& spec, Tensor& grad, const Tensor& expanded);
// Bytes of the [B, H, Sk, D] expanded k and v gradients GQA needs (0 without GQA).
std::int64_t expanded_kv_grad_bytes(const AttentionSpec& spec, std::int64_t element_bytes);

// Elements of one [B, H, Sq, Sk] score tensor, and bytes per element of the spec's dtype.
std::int64_t score_elements(const AttentionSpec& spec);
std::int64_t element_bytes(const AttentionSpec& spec);
// fp32 panels the CPU GEMM converts bf16/fp16 operands into (0 for fp32 and on other devices).
std::int64_t cpu_gemm_panel_bytes(const AttentionSpec& spec);

}  // namespace attnprof::variants
