#pragma once
// Which kernel of the GPU fused attention (efficient, and flash's sm80 path) runs a head dim, and
// whether it runs through a padded copy. The kernels are specialised for kFusedKernelHeadDims; any
// head dim 1..256 runs on the smallest specialisation at least as large: a multiple of 8 directly
// (the kernel zero-fills the columns past it on load and stores only its own), any other through
// a copy of q, k, v and out padded with zero columns to the next multiple of 8. The softmax scale
// and the FLOP count stay those of the real head dim. C++17 (the CUDA sources include it).
#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace attnprof::ops {

inline constexpr std::array<std::int64_t, 6> kFusedKernelHeadDims = {32, 64, 96, 128, 192, 256};
inline constexpr std::int64_t kFusedMaxHeadDim = 256;

struct FusedHeadDimRoute {
  std::int64_t head_dim = 0;    // the problem's
  std::int64_t padded_dim = 0;  // head_dim rounded up to a multiple of 8: the columns the kernel reads
  std::int64_t kernel_dim = 0;  // the specialisation that runs it (one of kFusedKernelHeadDims)
  bool padded_copy() const { return padded_dim != head_dim; }
};

// nullopt outside 1..kFusedMaxHeadDim.
std::optional<FusedHeadDimRoute> fused_head_dim_route(std::int64_t head_dim);

// One sentence for the variant's description when head_dim runs on a larger specialisation
// ("head_dim 33 runs on the D 64 kernel through a copy padded to 40 columns"); nullopt when it
// runs on its own specialisation or is out of range.
std::optional<std::string> fused_head_dim_note(std::int64_t head_dim);

// The refusal of a head dim outside 1..kFusedMaxHeadDim ("head_dim 257: the fused GPU kernels
// take 1..256"); nullopt inside.
std::optional<std::string> fused_head_dim_refusal(std::int64_t head_dim);

}  // namespace attnprof::ops
