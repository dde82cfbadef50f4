#pragma once
// The automatic choice of the sm_90a flash kernel's schedule (FlashSchedule::automatic) and the
// L2-section size of both schedules' tile order: host arithmetic only, tested without a GPU.
#include <cstdint>

#include "cuda/fused_attention.h"
#include "cuda/hopper/flash_hopper.h"

namespace attnprof::cuda::hopper {

// The schedule FlashSchedule::automatic runs, chosen from H200 measurements (causal bf16, both
// schedules timed in one run beside PyTorch's cuDNN): D 64 up to 2048 query rows and D 128 up to
// 4096 take tile_counter (16x32x512x128: 0.096 ms; 4x16x4096x128: 0.445 ms); longer ones take
// cta_per_tile (4x16x4096x64: 0.324 against 0.342 ms; 1x16x16384x128: 1.598 against 1.630 ms,
// both timed when cta_per_tile ran one section of every pair; in L2 sections too, 0.322 and 1.594).
// Head dims other than the tile-counter kernel's (64 and 128, by flash_sm90_kernel_head_dim: every
// multiple of 8 up to 64 and from 104 to 128) take cta_per_tile, the one schedule built for them.
FlashSchedule auto_flash_schedule(std::int64_t head_dim, std::int64_t seq_q);

// The head dim of the sm_90a kernel that runs a tensor of head dim `head_dim`: the smallest of 64,
// 96, 128, 192 and 256 at least as large, for a multiple of 8 from 8 to 256 (columns past it are zero
// in the kernel's tiles: flash_traits.cuh); 0 for any other head dim (flash_sm90_takes_head_dim).
int flash_sm90_kernel_head_dim(std::int64_t head_dim);

// Whether FlashSchedule::tile_counter has a kernel for `head_dim` (kernel head dim 64 or 128).
bool flash_sm90_tile_counter_takes(std::int64_t head_dim);

// The (batch, head) pairs per section of the sm_90a forward's tile order (both schedules) for `args`
// with `batch_heads` pairs: as many as fit their K and V (2 bytes an element) in 16 MiB of L2 (H200:
// 50 MB of L2; the rest holds the next section's first tiles and the streaming Q and O), counting a
// GQA group's shared K/V once per query head (conservative); at least 1, at most batch_heads. For
// cta_per_tile, measured on the H200 against one section of every pair (bench/RESULTS.md, session
// 17): 4x16x4096 D 256 (4 pairs) 0.824 against 0.909 ms, D 96 (10; 8 and 16 pairs timed: 0.413
// and 0.412) against 0.429, D 64 (16) 0.322 against 0.324; 1x16x16384 D 256 (1) 2.987 against
// 3.026, D 128 (2) 1.594 against 1.629, D 96 (2) 1.413 against 1.425. Sections of 4 pairs
// everywhere lost at 4x16x4096 D 64 (0.336 ms).
int l2_section_pairs(const FusedAttentionArgs& args, int batch_heads);

}  // namespace attnprof::cuda::hopper
