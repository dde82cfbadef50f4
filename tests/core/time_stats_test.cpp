// TimeStats against answers worked out by hand (linear interpolation at position p·(n − 1)).
#include <attnprof/time_stats.h>
#include <gtest/gtest.h>

namespace attnprof {
namespace {

struct Expected {
  int count;
  double median, min, max, p10, p90;
};

void expect_stats(const TimeStats& s, const Expected& e) {
  EXPECT_EQ(s.count, e.count);
  EXPECT_DOUBLE_EQ(s.median, e.median);
  EXPECT_DOUBLE_EQ(s.min, e.min);
  EXPECT_DOUBLE_EQ(s.max, e.max);
  EXPECT_DOUBLE_EQ(s.p10, e.p10);
  EXPECT_DOUBLE_EQ(s.p90, e.p90);
}

TEST(TimeStats, EvenCountMedianIsTheMeanOfTheMiddleTwo) {
  // sorted 1 2 3 4: median at 1.5 → 2.5; p10 at 0.3 → 1.3; p90 at 2.7 → 3.7
  expect_stats(time_stats({4, 1, 3, 2}), {4, 2.5, 1, 4, 1.3, 3.7});
}

TEST(TimeStats, OddCountMedianIsTheMiddleSample) {
  // sorted 1 3 5: median at 1 → 3; p10 at 0.2 → 1 + 0.2·2 = 1.4; p90 at 1.8 → 3 + 0.8·2 = 4.6
  expect_stats(time_stats({5, 1, 3}), {3, 3, 1, 5, 1.4, 4.6});
}

TEST(TimeStats, ElevenSamplesLandPercentilesOnSamples) {
  // 0..10 shuffled: p10 at 1.0 → 1, median at 5 → 5, p90 at 9 → 9
  TimeStats s = time_stats({7, 3, 10, 0, 5, 1, 9, 2, 8, 4, 6});
  EXPECT_EQ(s.count, 11);
  EXPECT_DOUBLE_EQ(s.p10, 1);
  EXPECT_DOUBLE_EQ(s.median, 5);
  EXPECT_DOUBLE_EQ(s.p90, 9);
}

TEST(TimeStats, TenSamplesInterpolate) {
  // 10 20 ... 100: p10 at 0.9 → 19; median at 4.5 → 55; p90 at 8.1 → 91
  TimeStats s = time_stats({100, 90, 80, 70, 60, 50, 40, 30, 20, 10});
  EXPECT_DOUBLE_EQ(s.p10, 19);
  EXPECT_DOUBLE_EQ(s.median, 55);
  EXPECT_DOUBLE_EQ(s.p90, 91);
}

TEST(TimeStats, OneSampleIsEveryStatistic) {
  expect_stats(time_stats({7}), {1, 7, 7, 7, 7, 7});
}

TEST(TimeStats, NoSamplesIsCountZero) {
  TimeStats s = time_stats({});
  EXPECT_EQ(s.count, 0);
  EXPECT_DOUBLE_EQ(s.median, 0);
  EXPECT_FALSE(s.overlaps(time_stats({0})));
}

TEST(TimeStats, OverlapIsOnTheMinMaxRange) {
  TimeStats a = time_stats({1, 2, 3});
  EXPECT_TRUE(a.overlaps(time_stats({3, 4})));   // touching at 3
  EXPECT_TRUE(a.overlaps(time_stats({0, 10})));  // one inside the other
  EXPECT_FALSE(a.overlaps(time_stats({3.5, 4})));
  EXPECT_FALSE(time_stats({3.5, 4}).overlaps(a));
}

TEST(TimeStats, ScaledKeepsTheCount) {
  TimeStats s = time_stats({1e6, 3e6}).scaled(1e-6);
  EXPECT_EQ(s.count, 2);
  EXPECT_DOUBLE_EQ(s.median, 2);
  EXPECT_DOUBLE_EQ(s.max, 3);
}

}  // namespace
}  // namespace attnprof
