#include "report/variant_color.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace attnprof::report {
namespace {

TEST(VariantColor, FixedPaletteForTheBuiltInVariants) {
  EXPECT_STREQ(variant_color("naive"), "#d62728");
  EXPECT_STREQ(variant_color("inplace"), "#ff7f0e");
  EXPECT_STREQ(variant_color("math"), "#8c564b");
  EXPECT_STREQ(variant_color("fused"), "#9467bd");
  EXPECT_STREQ(variant_color("efficient"), "#2ca02c");
  EXPECT_STREQ(variant_color("flash"), "#1f77b4");
  EXPECT_STREQ(variant_color("cudnn"), "#17becf");
}

TEST(VariantColor, PluginNamesByTheirFnv1aHash) {
  // FNV-1a 64 of "a" is 0xaf63dc4c8601ec8c, of "foobar" 0x85944171f73967e8 (the algorithm's
  // published test vectors); mod 10 they are 6 and 8: the seventh and ninth plug-in colours.
  EXPECT_STREQ(variant_color("a"), "#843c39");
  EXPECT_STREQ(variant_color("foobar"), "#5254a3");
  EXPECT_STREQ(variant_color(std::string("foo") + "bar"), variant_color("foobar"));
  // No plug-in name gets a built-in variant's colour.
  const std::set<std::string> builtin = {"#d62728", "#ff7f0e", "#8c564b", "#9467bd", "#2ca02c", "#1f77b4", "#17becf"};
  for (int i = 0; i < 200; ++i) {
    EXPECT_EQ(builtin.count(variant_color("plugin" + std::to_string(i))), 0u) << i;
  }
}

}  // namespace
}  // namespace attnprof::report
