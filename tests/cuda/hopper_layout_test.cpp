// The Hopper layouts on the host (no GPU): the 128-byte swizzle, the wgmma shared-memory descriptor
// and the accumulator fragment, each against values worked out by hand from
// research/hopper-flash.md §3.1-3.2, plus the tensor-map builder's argument checks.
#include <attnprof/error.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "cuda/hopper/flash_bwd_traits.cuh"
#include "cuda/hopper/flash_heuristics.h"
#include "cuda/hopper/flash_hopper.h"
#include "cuda/hopper/flash_traits.cuh"
#include "cuda/hopper/sectioned_order.h"
#include "cuda/hopper/swizzle.h"
#include "cuda/hopper/tma.h"
#include "cuda/hopper/wgmma_layout.h"

using namespace attnprof;
using namespace attnprof::cuda::hopper;

// byte = r·128 + ((c ^ (r & 7)) << 4)
TEST(HopperSwizzle, ChunkOffsetsWorkedByHand) {
  EXPECT_EQ(swizzle128_chunk_offset(0, 0), 0u);
  EXPECT_EQ(swizzle128_chunk_offset(0, 5), 80u);            // row 0 is not permuted
  EXPECT_EQ(swizzle128_chunk_offset(1, 0), 128u + 16u);     // 0 ^ 1 = 1
  EXPECT_EQ(swizzle128_chunk_offset(3, 2), 384u + 16u);     // 2 ^ 3 = 1
  EXPECT_EQ(swizzle128_chunk_offset(5, 7), 640u + 32u);     // 7 ^ 5 = 2
  EXPECT_EQ(swizzle128_chunk_offset(7, 7), 896u);           // 7 ^ 7 = 0
  EXPECT_EQ(swizzle128_chunk_offset(8, 1), 1024u + 16u);    // row 8 starts the next atom: phase 0 again
  EXPECT_EQ(swizzle128_chunk_offset(13, 6), 1664u + 48u);   // 6 ^ (13 & 7 = 5) = 3
  EXPECT_EQ(swizzle128_chunk_offset(63, 0), 8064u + 112u);  // 0 ^ 7 = 7
}

TEST(HopperSwizzle, ElementOffsetsKeepTheChunkTogether) {
  EXPECT_EQ(swizzle128_bf16_offset(0, 0), 0u);
  EXPECT_EQ(swizzle128_bf16_offset(2, 9), 256u + 48u + 2u);   // chunk 1 ^ 2 = 3, element 1 of it
  EXPECT_EQ(swizzle128_bf16_offset(6, 63), 768u + 16u + 14u); // chunk 7 ^ 6 = 1, element 7
}

TEST(HopperSwizzle, EachRowIsAPermutationOfItsOwn128Bytes) {
  for (std::uint32_t row = 0; row < 64; ++row) {
    std::set<std::uint32_t> offsets;
    for (std::uint32_t col = 0; col < 64; ++col) {
      std::uint32_t offset = swizzle128_bf16_offset(row, col);
      EXPECT_GE(offset, row * 128u);
      EXPECT_LT(offset, row * 128u + 128u);
      offsets.insert(offset);
    }
    EXPECT_EQ(offsets.size(), 64u) << "row " << row;
  }
}

// start >> 4 in bits 0-13, LBO field 1 in bits 16-29, SBO 1024 >> 4 = 64 in bits 32-45, layout 1 in 62-63.
TEST(HopperWgmmaDescriptor, FieldsWorkedByHand) {
  EXPECT_EQ(sw128_kmajor_descriptor(0x0000), 0x4000004000010000ull);
  EXPECT_EQ(sw128_kmajor_descriptor(0x0400), 0x4000004000010040ull);
  EXPECT_EQ(sw128_kmajor_descriptor(0x0420), 0x4000004000010042ull);  // k16 step 1: +32 B = +2 in the field
  // The field holds bits 4-17 of the address: the 256 KiB shared window, nothing above.
  EXPECT_EQ(sw128_kmajor_descriptor(0x3FFF0), 0x4000004000013FFFull);
  EXPECT_EQ(sw128_kmajor_descriptor(0x40000), 0x4000004000010000ull);
}

// Stepping a descriptor by bytes gives the descriptor of the stepped address, for both kinds (MN-major
// with the atom strides of Q and of K), over the offsets the kernels step by (k16 steps of 32 B,
// atoms, 2048-byte k16 row blocks) and up to the window's last 16 bytes (0x3FFF0).
TEST(HopperWgmmaDescriptor, AdvanceMatchesTheSteppedAddress) {
  EXPECT_EQ(advance_descriptor(0x4000004000010040ull, 0x20), 0x4000004000010042ull);  // worked by hand
  for (std::uint32_t base = 0; base < 0x40000u; base += 0x400u) {
    for (std::uint32_t bytes : {0x0u, 0x20u, 0x60u, 0x800u, 0x2000u, 0x4000u, 0x7FE0u, 0x10000u}) {
      if (base + bytes >= 0x40000u) continue;
      EXPECT_EQ(advance_descriptor(sw128_kmajor_descriptor(base), bytes), sw128_kmajor_descriptor(base + bytes))
          << base << " + " << bytes;
      for (std::uint32_t atom : {0x2000u, 0x4000u})
        EXPECT_EQ(advance_descriptor(sw128_mnmajor_descriptor(base, atom), bytes),
                  sw128_mnmajor_descriptor(base + bytes, atom))
            << base << " + " << bytes << ", atom " << atom;
    }
  }
  EXPECT_EQ(advance_descriptor(sw128_kmajor_descriptor(0x3FC00), 0x3F0), sw128_kmajor_descriptor(0x3FFF0));
}

TEST(HopperWgmmaAccumulator, PositionsWorkedByHand) {
  // thread 0: rows 0 and 8, columns 0,1 of each 8-column block.
  EXPECT_EQ(std::make_pair(accumulator_row(0, 0), accumulator_col(0, 0)), std::make_pair(0, 0));
  EXPECT_EQ(std::make_pair(accumulator_row(0, 1), accumulator_col(0, 1)), std::make_pair(0, 1));
  EXPECT_EQ(std::make_pair(accumulator_row(0, 2), accumulator_col(0, 2)), std::make_pair(8, 0));
  EXPECT_EQ(std::make_pair(accumulator_row(0, 4), accumulator_col(0, 4)), std::make_pair(0, 8));
  // thread 5 (warp 0, lane 5): row 1 (+8), columns 2,3; register 6 = block 1, second row half.
  EXPECT_EQ(std::make_pair(accumulator_row(5, 6), accumulator_col(5, 6)), std::make_pair(9, 10));
  // thread 37 (warp 1, lane 5): 16 rows further down.
  EXPECT_EQ(std::make_pair(accumulator_row(37, 6), accumulator_col(37, 6)), std::make_pair(25, 10));
  // thread 127, register 31: the last element.
  EXPECT_EQ(std::make_pair(accumulator_row(127, 31), accumulator_col(127, 31)), std::make_pair(63, 63));
}

TEST(HopperWgmmaAccumulator, TheWarpgroupCoversTheTileOnce) {
  std::set<std::pair<int, int>> seen;
  for (int t = 0; t < 128; ++t)
    for (int v = 0; v < 32; ++v) {
      int row = accumulator_row(t, v), col = accumulator_col(t, v);
      ASSERT_TRUE(row >= 0 && row < 64 && col >= 0 && col < 64) << t << " " << v;
      seen.insert({row, col});
    }
  EXPECT_EQ(seen.size(), 64u * 64u);
}

// Argument checks run before the driver is asked for anything, so they need no GPU.
TEST(HopperTensorMap, RejectsAMisalignedAddressAndABadStride) {
  try {
    make_bf16_tile_map(reinterpret_cast<const void*>(std::uintptr_t{0x1008}), 128, 128, 128);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("0x1008 is not 16-byte aligned"), std::string::npos) << e.what();
  }
  try {
    make_bf16_tile_map(reinterpret_cast<const void*>(std::uintptr_t{0x1000}), 128, 100, 100);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("row_stride 100"), std::string::npos) << e.what();
  }
}

// V as an MN-major B operand: start >> 4 in bits 0-13, LBO = the 64-column atom stride (128 rows ×
// 128 B = 16384 B → field 1024) in bits 16-29, SBO 1024 B → 64 in bits 32-45, layout 1 in bits 62-63.
TEST(HopperWgmmaDescriptor, MnMajorFieldsWorkedByHand) {
  EXPECT_EQ(sw128_mnmajor_descriptor(0x0000, 16384), 0x4000004004000000ull);
  EXPECT_EQ(sw128_mnmajor_descriptor(0x8800, 16384), 0x4000004004000880ull);  // k16 step 1 of a tile at 0x8000: +2048 B
  EXPECT_EQ(sw128_mnmajor_descriptor(0x4000, 8192), 0x4000004002000400ull);   // 64-row atoms
}

// The RS A fragment, from the PTX figure: thread 0 holds rows 0 and 8, columns 0-1 and 8-9; lane 5 of
// warp 1 (thread 37) holds rows 17 and 25, columns 2-3 and 10-11.
TEST(HopperWgmmaRsFragment, PositionsWorkedByHand) {
  EXPECT_EQ(std::make_pair(rs_a_row(0, 0), rs_a_col(0, 0, 0)), std::make_pair(0, 0));
  EXPECT_EQ(std::make_pair(rs_a_row(0, 1), rs_a_col(0, 1, 1)), std::make_pair(8, 1));
  EXPECT_EQ(std::make_pair(rs_a_row(0, 2), rs_a_col(0, 2, 0)), std::make_pair(0, 8));
  EXPECT_EQ(std::make_pair(rs_a_row(37, 0), rs_a_col(37, 0, 1)), std::make_pair(17, 3));
  EXPECT_EQ(std::make_pair(rs_a_row(37, 3), rs_a_col(37, 3, 0)), std::make_pair(25, 10));
}

// P never leaves registers: for every thread, k16 step, register and half, the S accumulator that
// rs_a_source_accumulator names holds exactly the P element the A fragment needs (same row, column
// 16·step + the fragment column) — over an m64n128 S tile (8 steps, 64 accumulators).
TEST(HopperWgmmaRsFragment, PackedAccumulatorsAreTheAFragmentOfEveryStep) {
  std::set<int> used;
  for (int t = 0; t < 128; ++t)
    for (int step = 0; step < 8; ++step)
      for (int reg = 0; reg < 4; ++reg)
        for (int half = 0; half < 2; ++half) {
          const int v = rs_a_source_accumulator(step, reg, half);
          ASSERT_TRUE(v >= 0 && v < 64) << v;
          EXPECT_EQ(accumulator_row(t, v), rs_a_row(t, reg)) << t << " " << step << " " << reg;
          EXPECT_EQ(accumulator_col(t, v), 16 * step + rs_a_col(t, reg, half)) << t << " " << step << " " << reg;
          if (t == 0) used.insert(v);
        }
  EXPECT_EQ(used.size(), 64u);  // every accumulator feeds exactly one A element
}

TEST(HopperTensorMap, AttentionMapRejectsBadArgumentsNamingThem) {
  const void* aligned = reinterpret_cast<const void*>(std::uintptr_t{0x1000});
  auto message = [](auto&& call) {
    try {
      call();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no throw");
  };
  EXPECT_NE(message([&] {
              make_attention_tile_map(reinterpret_cast<const void*>(std::uintptr_t{0x1004}),
                                      CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 1, 2, 100, 64, 12800, 6400, 64, 128);
            }).find("0x1004 is not 16-byte aligned"),
            std::string::npos);
  EXPECT_NE(message([&] {
              make_attention_tile_map(aligned, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 1, 2, 100, 100, 20000, 10000, 100, 128);
            }).find("head_dim 100"),
            std::string::npos);
  EXPECT_NE(message([&] {
              make_attention_tile_map(aligned, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 1, 2, 100, 64, 12800, 6400, 68, 128);
            }).find("seq 68"),
            std::string::npos);
  EXPECT_NE(message([&] {
              make_attention_tile_map(aligned, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 1, 2, 100, 64, 12800, 6400, 64, 128);
            }).find("bf16 or fp16"),
            std::string::npos);
  EXPECT_NE(message([&] {
              make_attention_tile_map(aligned, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 1, 2, 100, 64, 12800, 6400, 64, 300);
            }).find("box_rows 300"),
            std::string::npos);
}

namespace attnprof::cuda::hopper {
namespace {
// The automatic schedule's choices, at the shapes whose measurements set the break-evens
// (flash_heuristics.h).
TEST(HopperFlashChoice, AutoFollowsTheMeasuredBreakEvens) {
  EXPECT_EQ(auto_flash_schedule(64, 1024), FlashSchedule::tile_counter);  // 8x16x1024x64
  EXPECT_EQ(auto_flash_schedule(64, 2048), FlashSchedule::tile_counter);
  EXPECT_EQ(auto_flash_schedule(64, 2049), FlashSchedule::cta_per_tile);  // 4x16x4096x64 side
  EXPECT_EQ(auto_flash_schedule(64, 4096), FlashSchedule::cta_per_tile);
  EXPECT_EQ(auto_flash_schedule(128, 512), FlashSchedule::tile_counter);  // 16x32x512x128
  EXPECT_EQ(auto_flash_schedule(128, 4096), FlashSchedule::tile_counter);  // 4x16x4096x128
  EXPECT_EQ(auto_flash_schedule(128, 4097), FlashSchedule::cta_per_tile);
  EXPECT_EQ(auto_flash_schedule(128, 16384), FlashSchedule::cta_per_tile);  // 1x16x16384x128
}

// Which kernel a head dim runs on: the smallest specialisation (64, 96, 128, 192, 256) at least as
// large, for multiples of 8 up to 256; nothing else (the CUDA backend pads those first). And the
// automatic schedule picks one that was built for that kernel (tile_counter only at 64 and 128).
TEST(HopperFlashChoice, HeadDimsRunOnTheNextLargerKernel) {
  const std::pair<std::int64_t, int> want[] = {{8, 64},    {32, 64},   {56, 64},   {64, 64},   {72, 96},
                                               {80, 96},   {96, 96},   {104, 128}, {120, 128}, {128, 128},
                                               {136, 192}, {160, 192}, {192, 192}, {200, 256}, {224, 256},
                                               {248, 256}, {256, 256}};
  for (const auto& [head_dim, kernel] : want) {
    EXPECT_EQ(flash_sm90_kernel_head_dim(head_dim), kernel) << head_dim;
    EXPECT_TRUE(flash_sm90_takes_head_dim(head_dim)) << head_dim;
    EXPECT_EQ(flash_sm90_tile_counter_takes(head_dim), kernel == 64 || kernel == 128) << head_dim;
    const FlashSchedule short_seq = auto_flash_schedule(head_dim, 512);
    EXPECT_EQ(short_seq, kernel == 64 || kernel == 128 ? FlashSchedule::tile_counter : FlashSchedule::cta_per_tile)
        << head_dim;
    EXPECT_EQ(auto_flash_schedule(head_dim, 16384), FlashSchedule::cta_per_tile) << head_dim;
  }
  for (std::int64_t head_dim : {-8, 0, 1, 4, 12, 63, 100, 129, 250, 257, 264, 512}) {
    EXPECT_EQ(flash_sm90_kernel_head_dim(head_dim), 0) << head_dim;
    EXPECT_FALSE(flash_sm90_takes_head_dim(head_dim)) << head_dim;
  }
  int taken = 0;
  for (std::int64_t head_dim = 1; head_dim <= 300; ++head_dim) taken += flash_sm90_takes_head_dim(head_dim) ? 1 : 0;
  EXPECT_EQ(taken, 32);  // 8, 16, ..., 256
}

// Each cta_per_tile instantiation's tiles (FA3's on H100) and shared memory, worked out by hand:
// Q kBlockM·(64-column atoms)·128 B + 2 stages × (K + V) kBlockN·atoms·128 B + 1 KiB of alignment
// slack + the barriers, within sm_90's 227 KiB per CTA.
TEST(HopperFlashChoice, EveryCtaPerTileKernelFitsSharedMemory) {
  using namespace flash_sm90;
  constexpr int kSlack = 1024 + static_cast<int>(sizeof(PipelineBarriers));
  struct Want {
    int block_m, block_n, consumer_warpgroups, smem;
  };
  auto tiles = [](auto traits) {
    using Tr = decltype(traits);
    return Want{Tr::kBlockM, Tr::kBlockN, Tr::kConsumerWarpgroups, Tr::kSmemBytes};
  };
  const std::pair<Want, Want> cases[] = {
      {tiles(CtaPerTileTraits<64>{}), {192, 128, 3, 192 * 128 + 4 * 128 * 128 + kSlack}},                // 88 KiB
      {tiles(CtaPerTileTraits<96>{}), {128, 128, 2, 2 * 128 * 128 + 4 * 2 * 128 * 128 + kSlack}},        // 160 KiB
      {tiles(CtaPerTileTraits<128>{}), {128, 128, 2, 2 * 128 * 128 + 4 * 2 * 128 * 128 + kSlack}},       // 160 KiB
      {tiles(CtaPerTileTraits<192>{}), {128, 112, 2, 3 * 128 * 128 + 4 * 3 * 112 * 128 + kSlack}},       // 216 KiB
      {tiles(CtaPerTileTraits<256>{}), {128, 80, 2, 4 * 128 * 128 + 4 * 4 * 80 * 128 + kSlack}}};        // 224 KiB
  for (const auto& [got, want] : cases) {
    EXPECT_EQ(got.block_m, want.block_m);
    EXPECT_EQ(got.block_n, want.block_n);
    EXPECT_EQ(got.consumer_warpgroups, want.consumer_warpgroups);
    EXPECT_EQ(got.smem, want.smem) << "kBlockN " << want.block_n;
    EXPECT_LE(got.smem, 227 * 1024) << "kBlockN " << want.block_n;
  }
  EXPECT_EQ(CtaPerTileTraits<256>::kConsumerRegisters, 240);  // 128 O + 40 S + 20 P accumulators a thread
  EXPECT_EQ(CtaPerTileTraits<256>::kOAccumulators, 128);
  EXPECT_EQ(CtaPerTileTraits<96>::kQKSteps, 6);  // D 96: the first half of the second atom
}

// What the sm_90a forward refuses before it touches a tensor or the device, each in one line naming
// the parameter: a head dim it has no kernel for, the tile-counter schedule at a head dim whose
// kernel has only cta_per_tile, and the timeline build at any head dim but 64 and 128.
TEST(HopperFlashChoice, RefusesHeadDimsAndSchedulesItHasNoKernelFor) {
  auto message = [](auto&& call) {
    try {
      call();
    } catch (const UsageError& e) {
      return std::string(e.what());
    } catch (const std::exception& e) {
      return std::string("not a UsageError: ") + e.what();
    }
    return std::string("no throw");
  };
  cuda::FusedAttentionArgs args;
  args.dtype = DType::bf16;
  args.batch = args.heads = args.kv_heads = 1;
  args.seq_q = args.seq_k = 128;
  args.head_dim = 100;
  EXPECT_EQ(message([&] { launch_flash_attention_sm90(args, nullptr, FlashSchedule::automatic); }),
            "head_dim 100: the sm_90a flash kernel takes multiples of 8 from 8 to 256");
  args.head_dim = 80;
  EXPECT_EQ(message([&] { launch_flash_attention_sm90(args, nullptr, FlashSchedule::tile_counter); }),
            "flash_schedule 'sm90-tile-counter': head_dim 80 (rounded up to a multiple of 8) runs on the D 96 "
            "kernel, built for sm90-cta-per-tile only; the tile counter takes head dims 1..64 and 97..128");
  args.head_dim = 96;
  EXPECT_EQ(message([&] { run_flash_timeline_sm90(args, nullptr); }),
            "head_dim 96: the flash timeline build takes 64 or 128");
}

// The forward's L2 sections (both schedules): as many (batch, head) pairs as fit their K and V (4·Sk·D
// bytes each) in 16 MiB, at least 1 and at most all of them.
TEST(HopperFlashChoice, L2SectionsHoldWhatFitsIn16MiB) {
  auto args = [](std::int64_t s, std::int64_t d) {
    FusedAttentionArgs a;
    a.seq_q = a.seq_k = s;
    a.head_dim = d;
    return a;
  };
  EXPECT_EQ(l2_section_pairs(args(512, 128), 512), 64);   // 256 KiB a pair
  EXPECT_EQ(l2_section_pairs(args(4096, 128), 64), 8);    // 2 MiB
  EXPECT_EQ(l2_section_pairs(args(16384, 128), 16), 2);   // 8 MiB
  EXPECT_EQ(l2_section_pairs(args(65536, 128), 4), 1);    // 32 MiB: at least 1
  EXPECT_EQ(l2_section_pairs(args(512, 128), 16), 16);    // 64 would fit: all 16
  EXPECT_EQ(l2_section_pairs(args(4096, 256), 64), 4);    // 4 MiB
  EXPECT_EQ(l2_section_pairs(args(4096, 96), 64), 10);    // 1.5 MiB: 10 fit, not 11
}
}  // namespace
}  // namespace attnprof::cuda::hopper

// The grids' sectioned order, worked by hand for 5 pairs × 3 blocks in sections of 2 pairs: pairs 0
// and 1 at rank 0, 1, 2; then pairs 2 and 3; then pair 4 alone (the short last section).
TEST(SectionedOrder, WorkedByHandWithAShortLastSection) {
  const std::pair<int, int> expected[] = {{0, 0}, {1, 0}, {0, 1}, {1, 1}, {0, 2}, {1, 2}, {2, 0}, {3, 0},
                                          {2, 1}, {3, 1}, {2, 2}, {3, 2}, {4, 0}, {4, 1}, {4, 2}};
  for (int tile = 0; tile < 15; ++tile) {
    const SectionedTile t = sectioned_tile(tile, 5, 2, 3);
    EXPECT_EQ(std::make_pair(t.pair, t.rank), expected[tile]) << "tile " << tile;
  }
  static_assert(sectioned_tile(7, 5, 2, 3).pair == 3 && sectioned_tile(7, 5, 2, 3).rank == 0);
}

// The backward's grid order, worked by hand for 3 (batch, kv head) pairs × 2 key blocks in sections
// of 2 pairs: pairs 0 and 1 at key block 0, then at 1, then pair 2's key blocks.
TEST(HopperBackwardGrid, OrderWorkedByHand) {
  flash_bwd_sm90::BwdSm90Params p;
  p.pairs = 3, p.key_blocks = 2, p.group_pairs = 2;
  const std::pair<int, int> expected[] = {{0, 0}, {1, 0}, {0, 1}, {1, 1}, {2, 0}, {2, 1}};
  for (int tile = 0; tile < 6; ++tile) {
    int key_block = -1;
    const int pair = flash_bwd_sm90::tile_pair(p, tile, key_block);
    EXPECT_EQ(std::make_pair(pair, key_block), expected[tile]) << "tile " << tile;
  }
}

// Every (pair, key block) gets exactly one CTA, a section's CTAs are contiguous (sections in order),
// and within a section the key blocks never go back (the longest, key block 0 under a causal mask,
// first) — over sections that divide the pairs and ones that leave a short last section.
TEST(HopperBackwardGrid, EachPairAndKeyBlockOnceLongestFirst) {
  for (const auto& [pairs, key_blocks, group] :
       {std::tuple{64, 32, 8}, {16, 128, 16}, {13, 5, 4}, {1, 7, 8}, {5, 1, 2}}) {
    flash_bwd_sm90::BwdSm90Params p;
    p.pairs = pairs, p.key_blocks = key_blocks, p.group_pairs = group;
    std::set<std::pair<int, int>> seen;
    int last_section = 0, last_block = 0;
    for (int tile = 0; tile < pairs * key_blocks; ++tile) {
      int key_block = -1;
      const int pair = flash_bwd_sm90::tile_pair(p, tile, key_block);
      ASSERT_TRUE(pair >= 0 && pair < pairs && key_block >= 0 && key_block < key_blocks) << pair << " " << key_block;
      EXPECT_TRUE(seen.emplace(pair, key_block).second) << "pair " << pair << " key block " << key_block << " twice";
      const int section = pair / group;
      EXPECT_GE(section, last_section) << "tile " << tile;
      if (section == last_section) {
        EXPECT_GE(key_block, last_block) << "tile " << tile;
      }
      last_section = section, last_block = key_block;
    }
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(pairs * key_blocks));
  }
}
