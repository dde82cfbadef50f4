#include "cuda/hopper/flash_heuristics.h"

#include <algorithm>

namespace attnprof::cuda::hopper {

int flash_sm90_kernel_head_dim(std::int64_t head_dim) {
  if (head_dim < 8 || head_dim > 256 || head_dim % 8 != 0) return 0;
  for (int kernel : {64, 96, 128, 192, 256})
    if (head_dim <= kernel) return kernel;
  return 0;
}

bool flash_sm90_takes_head_dim(std::int64_t head_dim) { return flash_sm90_kernel_head_dim(head_dim) != 0; }

bool flash_sm90_tile_counter_takes(std::int64_t head_dim) {
  const int kernel = flash_sm90_kernel_head_dim(head_dim);
  return kernel == 64 || kernel == 128;
}

FlashSchedule auto_flash_schedule(std::int64_t head_dim, std::int64_t seq_q) {
  const int kernel = flash_sm90_kernel_head_dim(head_dim);
  if (kernel == 64) return seq_q <= 2048 ? FlashSchedule::tile_counter : FlashSchedule::cta_per_tile;
  if (kernel == 128) return seq_q <= 4096 ? FlashSchedule::tile_counter : FlashSchedule::cta_per_tile;
  return FlashSchedule::cta_per_tile;
}

int l2_section_pairs(const FusedAttentionArgs& args, int batch_heads) {
  constexpr long long kL2SectionBytes = 16ll << 20;
  const long long kv_bytes_per_pair = 4ll * args.seq_k * args.head_dim;
  return static_cast<int>(
      std::clamp<long long>(kL2SectionBytes / std::max(kv_bytes_per_pair, 1ll), 1, std::max(batch_heads, 1)));
}

}  // namespace attnprof::cuda::hopper
