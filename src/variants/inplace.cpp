// inplace: naive with scores.masked_fill_(mask, -inf) in place — no clone, so 5 pieces of work
// per causal forward on the CPU (gemm, mul, masked_fill, softmax, gemm). Same memory peak as
// naive (q·kᵀ and its scaled copy are alive together) and the same NaN on a fully masked row.
// The composition lives in naive.cpp (NaiveVariant with in_place = true); this file makes it.
#include <memory>

#include "variants/builtin_list.h"
#include "variants/naive.h"

namespace attnprof::variants {
std::unique_ptr<Variant> make_inplace_variant() { return std::make_unique<NaiveVariant>(true); }
}  // namespace attnprof::variants
