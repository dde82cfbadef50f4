#include "ops/fused_head_dim.h"

namespace attnprof::ops {

std::optional<FusedHeadDimRoute> fused_head_dim_route(std::int64_t head_dim) {
  if (head_dim < 1 || head_dim > kFusedMaxHeadDim) return std::nullopt;
  FusedHeadDimRoute route;
  route.head_dim = head_dim;
  route.padded_dim = (head_dim + 7) / 8 * 8;
  for (std::int64_t d : kFusedKernelHeadDims)
    if (d >= route.padded_dim) {
      route.kernel_dim = d;
      break;
    }
  return route;
}

std::optional<std::string> fused_head_dim_note(std::int64_t head_dim) {
  const auto route = fused_head_dim_route(head_dim);
  if (!route || route->kernel_dim == head_dim) return std::nullopt;
  std::string note = "head_dim " + std::to_string(head_dim) + " runs on the D " + std::to_string(route->kernel_dim) +
                     " kernel";
  if (route->padded_copy()) return note + " through a copy padded to " + std::to_string(route->padded_dim) + " columns";
  return note + ", the columns past " + std::to_string(head_dim) + " zero-filled on load";
}

std::optional<std::string> fused_head_dim_refusal(std::int64_t head_dim) {
  if (fused_head_dim_route(head_dim)) return std::nullopt;
  return "head_dim " + std::to_string(head_dim) + ": the fused GPU kernels take 1.." + std::to_string(kFusedMaxHeadDim);
}

}  // namespace attnprof::ops
