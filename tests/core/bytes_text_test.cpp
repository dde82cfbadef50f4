#include "core/bytes_text.h"

#include <gtest/gtest.h>

namespace attnprof {
namespace {

// Worked by hand: each unit from 1024 of the one below, one decimal (two for GiB).
TEST(FormatBytes, PicksTheUnitAtEachPowerOf1024) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(812), "812 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1024), "1.0 KiB");
  EXPECT_EQ(format_bytes(16 * 1024), "16.0 KiB");
  EXPECT_EQ(format_bytes(256.0 * 1024 * 1024), "256.0 MiB");
  EXPECT_EQ(format_bytes(1.5 * 1024 * 1024 * 1024), "1.50 GiB");
}

}  // namespace
}  // namespace attnprof
