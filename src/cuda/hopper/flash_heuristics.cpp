#include "cuda/hopper/flash_heuristics.h"

#include <algorithm>

namespace attnprof::cuda::hopper {

FlashSchedule auto_flash_schedule(std::int64_t head_dim, std::int64_t seq_q) {
  if (head_dim == 64) return seq_q <= 2048 ? FlashSchedule::tile_counter : FlashSchedule::cta_per_tile;
  return seq_q <= 4096 ? FlashSchedule::tile_counter : FlashSchedule::cta_per_tile;
}

int l2_section_pairs(const FusedAttentionArgs& args, int batch_heads) {
  constexpr long long kL2SectionBytes = 16ll << 20;
  const long long kv_bytes_per_pair = 4ll * args.seq_k * args.head_dim;
  return static_cast<int>(
      std::clamp<long long>(kL2SectionBytes / std::max(kv_bytes_per_pair, 1ll), 1, std::max(batch_heads, 1)));
}

}  // namespace attnprof::cuda::hopper
