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

// Elements of one [B, H, Sq, Sk] score tensor, and bytes per element of the spec's dtype.
std::int64_t score_elements(const AttentionSpec& spec);
std::int64_t element_bytes(const AttentionSpec& spec);
// fp32 panels the CPU GEMM converts bf16/fp16 operands into (0 for fp32 and on other devices).
std::int64_t cpu_gemm_panel_bytes(const AttentionSpec& spec);

}  // namespace attnprof::variants
