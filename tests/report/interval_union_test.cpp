// The union of device intervals against answers worked out by hand.
#include <gtest/gtest.h>

#include "report/interval_union.h"

namespace attnprof::report {
namespace {

TEST(IntervalUnion, DisjointIntervalsAddUp) { EXPECT_EQ(union_ns({{0, 10}, {20, 25}, {30, 40}}), 10 + 5 + 10); }

TEST(IntervalUnion, ANestedIntervalAddsNothing) { EXPECT_EQ(union_ns({{0, 100}, {10, 20}, {50, 100}}), 100); }

TEST(IntervalUnion, PartialOverlapCountsTheSharedPartOnce) {
  // [0, 10) and [6, 16): 16, not 20; then [14, 30) extends the run to 30.
  EXPECT_EQ(union_ns({{0, 10}, {6, 16}}), 16);
  EXPECT_EQ(union_ns({{0, 10}, {6, 16}, {14, 30}}), 30);
}

TEST(IntervalUnion, TouchingIntervalsJoin) { EXPECT_EQ(union_ns({{0, 5}, {5, 9}, {9, 10}}), 10); }

TEST(IntervalUnion, EmptyInputIsZero) { EXPECT_EQ(union_ns({}), 0); }

TEST(IntervalUnion, ZeroLengthAndReversedIntervalsCountNothing) {
  EXPECT_EQ(union_ns({{5, 5}}), 0);
  EXPECT_EQ(union_ns({{5, 5}, {7, 3}, {10, 12}}), 2);
  // A zero-length interval inside a gap does not bridge it: [0, 4) and [6, 8) stay apart.
  EXPECT_EQ(union_ns({{0, 4}, {5, 5}, {6, 8}}), 4 + 2);
}

TEST(IntervalUnion, OrderDoesNotMatter) {
  // [40, 50), [0, 10), [5, 20), [45, 60): runs [0, 20) and [40, 60).
  EXPECT_EQ(union_ns({{40, 50}, {0, 10}, {5, 20}, {45, 60}}), 20 + 20);
  EXPECT_EQ(union_ns({{45, 60}, {5, 20}, {0, 10}, {40, 50}}), 40);
}

TEST(IntervalUnion, NegativeTimesAndLargeValues) {
  EXPECT_EQ(union_ns({{-10, 0}, {-5, 5}}), 15);
  const std::int64_t t = 1'700'000'000'000'000'000;  // ns since the epoch, as traces record them
  EXPECT_EQ(union_ns({{t, t + 406'000}, {t + 400'000, t + 430'000}}), 430'000);
}

}  // namespace
}  // namespace attnprof::report
