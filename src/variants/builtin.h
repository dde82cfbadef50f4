#pragma once
namespace attnprof {
// Registers naive, inplace, math, fused, efficient, flash and cudnn, in that order.
void register_builtin_variants();
}  // namespace attnprof
