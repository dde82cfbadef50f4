#include <attnprof/error.h>
#include <gtest/gtest.h>

#include <vector>

#include "cuda/clock_map.h"

using namespace attnprof;
using namespace attnprof::cuda;

// Scripted clocks: the host reads advance by the given gaps; the device clock is host − 1'000'000.
TEST(ClockMap, PicksTheNarrowestWindow) {
  std::vector<std::int64_t> host_reads{100, 180, 200, 210, 300, 500};  // windows 80, 10, 200
  std::size_t next = 0;
  std::int64_t last_host = 0;
  auto host = [&] { return last_host = host_reads.at(next++); };
  auto device = [&] { return last_host + 5 - 1'000'000; };  // read just after `before`
  ClockSample s = sample_clocks(host, device, 3);
  EXPECT_EQ(s.host_ns, 205);        // midpoint of 200..210
  EXPECT_EQ(s.device_ns, 205 - 1'000'000);
  EXPECT_EQ(s.uncertainty_ns, 5);
}

TEST(ClockMap, OffsetOnly) {
  ClockMap map;
  map.set_start({5000, 1000, 1});
  EXPECT_EQ(map.to_host(1000), 5000);
  EXPECT_EQ(map.to_host(2500), 6500);
  EXPECT_DOUBLE_EQ(map.drift_ppm(), 0.0);
}

// The device clock runs 100 ppm slow: 10'000'000 device ns span 10'001'000 host ns.
TEST(ClockMap, CorrectsLinearDrift) {
  ClockMap map;
  map.set_start({1'000'000, 0, 0});
  map.set_end({11'001'000, 10'000'000, 0});
  EXPECT_EQ(map.to_host(0), 1'000'000);
  EXPECT_EQ(map.to_host(10'000'000), 11'001'000);
  EXPECT_EQ(map.to_host(5'000'000), 6'000'500);
  EXPECT_NEAR(map.drift_ppm(), 100.0, 1e-6);
}

TEST(ClockMap, NoSampleIsAnError) {
  ClockMap map;
  EXPECT_THROW(map.to_host(1), Error);
}
