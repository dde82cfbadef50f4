// The GPU fused kernels' head-dim routing: which specialisation runs a head dim, whether it goes
// through a padded copy, the note the variants show and the refusal outside 1..256.
#include "ops/fused_head_dim.h"

#include <gtest/gtest.h>

using namespace attnprof::ops;

namespace {

struct Expected {
  std::int64_t head_dim, padded_dim, kernel_dim;
};

}  // namespace

TEST(FusedHeadDim, EachHeadDimTakesTheNextSpecialisationAndPadsOnlyOffMultiplesOf8) {
  // Worked out by hand from the specialisations 32, 64, 96, 128, 192, 256.
  const Expected cases[] = {{1, 8, 32},     {7, 8, 32},     {8, 8, 32},       {24, 24, 32},   {32, 32, 32},
                            {33, 40, 64},   {40, 40, 64},   {59, 64, 64},     {64, 64, 64},   {65, 72, 96},
                            {80, 80, 96},   {96, 96, 96},   {97, 104, 128},   {111, 112, 128}, {128, 128, 128},
                            {129, 136, 192}, {160, 160, 192}, {192, 192, 192}, {193, 200, 256}, {224, 224, 256},
                            {255, 256, 256}, {256, 256, 256}};
  for (const Expected& e : cases) {
    const auto route = fused_head_dim_route(e.head_dim);
    ASSERT_TRUE(route.has_value()) << "head_dim " << e.head_dim;
    EXPECT_EQ(route->head_dim, e.head_dim);
    EXPECT_EQ(route->padded_dim, e.padded_dim) << "head_dim " << e.head_dim;
    EXPECT_EQ(route->kernel_dim, e.kernel_dim) << "head_dim " << e.head_dim;
    EXPECT_EQ(route->padded_copy(), e.head_dim % 8 != 0) << "head_dim " << e.head_dim;
  }
}

TEST(FusedHeadDim, EveryHeadDimInRangeHasAKernelNoSmallerThanItsPaddedWidth) {
  for (std::int64_t d = 1; d <= 256; ++d) {
    const auto route = fused_head_dim_route(d);
    ASSERT_TRUE(route.has_value()) << d;
    EXPECT_EQ(route->padded_dim % 8, 0) << d;
    EXPECT_GE(route->padded_dim, d) << d;
    EXPECT_LT(route->padded_dim - d, 8) << d;
    EXPECT_GE(route->kernel_dim, route->padded_dim) << d;
  }
}

TEST(FusedHeadDim, NoteNamesTheKernelAndThePadding) {
  EXPECT_EQ(fused_head_dim_note(33), "head_dim 33 runs on the D 64 kernel through a copy padded to 40 columns");
  EXPECT_EQ(fused_head_dim_note(80), "head_dim 80 runs on the D 96 kernel, the columns past 80 zero-filled on load");
  EXPECT_EQ(fused_head_dim_note(60), "head_dim 60 runs on the D 64 kernel through a copy padded to 64 columns");
  EXPECT_FALSE(fused_head_dim_note(96).has_value());
  EXPECT_FALSE(fused_head_dim_note(256).has_value());
  EXPECT_FALSE(fused_head_dim_note(257).has_value());
}

TEST(FusedHeadDim, OutsideOneTo256IsRefusedNamingTheRange) {
  EXPECT_FALSE(fused_head_dim_route(0).has_value());
  EXPECT_FALSE(fused_head_dim_route(257).has_value());
  EXPECT_EQ(fused_head_dim_refusal(257), "head_dim 257: the fused GPU kernels take 1..256");
  EXPECT_EQ(fused_head_dim_refusal(0), "head_dim 0: the fused GPU kernels take 1..256");
  EXPECT_FALSE(fused_head_dim_refusal(1).has_value());
  EXPECT_FALSE(fused_head_dim_refusal(256).has_value());
}
