#pragma once
// FlashAttention's own test grid, which the GPU tests of the fused forward
// (attention_head_dim_test.cpp) and backward (attention_backward_test.cpp) run: its (seq_q, seq_k)
// pairs, the head dims (each specialisation, multiples of 8 on a larger one, and odd ones through
// the padded copy), and the subset run under compute-sanitizer (ATTNPROF_QUICK).
#include <cstdint>
#include <utility>

namespace attnprof::cuda::gpu_testing {

inline constexpr std::pair<std::int64_t, std::int64_t> kFlashAttentionSeqPairs[] = {
    {113, 203}, {128, 217}, {113, 211}, {108, 256}, {256, 512},  {512, 256}, {1024, 1024}, {1023, 1024},
    {1024, 1023}, {2048, 2048}, {1, 239}, {3, 799}, {127, 512}, {127, 513}, {239, 1},    {799, 3}};
inline constexpr std::int64_t kGridHeadDims[] = {32, 40, 59, 64, 80, 96, 111, 128, 160, 192, 224, 256};

// The sanitizers' subset: four pairs (tails, one row, one key) and five head dims (D 32, the
// 12-chunk rows of D 96, 160 zero-filled on D 192, 59 padded, 256).
inline bool quick_grid_cell(std::int64_t sq, std::int64_t sk, std::int64_t d) {
  const bool pair = (sq == 113 && sk == 203) || (sq == 1 && sk == 239) || (sq == 127 && sk == 513) ||
                    (sq == 239 && sk == 1);
  return pair && (d == 32 || d == 59 || d == 96 || d == 160 || d == 256);
}

}  // namespace attnprof::cuda::gpu_testing
