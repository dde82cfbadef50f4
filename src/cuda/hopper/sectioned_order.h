#pragma once
// The order of the sm_90a kernels' grids: `pairs` (batch, head) pairs of `blocks` tiles each, in
// sections of `group` pairs (the last section may be short), and within a section every pair's
// tile of rank 0, then every pair's tile of rank 1, and so on. The forward's query tiles
// (flash_tile_scheduler.cuh) and the backward's key blocks (flash_bwd_traits.cuh) both run in it,
// each mapping rank 0 to its longest tile under a causal mask, so the tiles that re-read a pair's
// operands run close together.
#include "cuda/hopper/host_device.h"

namespace attnprof::cuda::hopper {

struct SectionedTile {
  int pair, rank;
};

// Tile `tile` (0 .. pairs·blocks − 1) of the order.
ATTNPROF_HOST_DEVICE constexpr SectionedTile sectioned_tile(int tile, int pairs, int group, int blocks) {
  const int section = tile / (group * blocks), first = section * group;
  const int section_pairs = pairs - first < group ? pairs - first : group;
  const int in_section = tile - first * blocks;
  return {first + in_section % section_pairs, in_section / section_pairs};
}

}  // namespace attnprof::cuda::hopper
