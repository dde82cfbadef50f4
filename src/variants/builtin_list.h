#pragma once
// One factory per built-in variant file; builtin.cpp registers them in DESIGN.md's order.
#include <attnprof/variant.h>

#include <memory>

namespace attnprof::variants {
std::unique_ptr<Variant> make_naive_variant();
std::unique_ptr<Variant> make_inplace_variant();
std::unique_ptr<Variant> make_math_variant();
std::unique_ptr<Variant> make_fused_variant();
std::unique_ptr<Variant> make_efficient_variant();
std::unique_ptr<Variant> make_flash_variant();
}  // namespace attnprof::variants
