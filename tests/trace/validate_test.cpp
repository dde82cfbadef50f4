#include <gtest/gtest.h>

#include "sample_trace.h"
#include "trace/validate.h"

namespace attnprof::trace {
namespace {

Event x(std::string name, std::int64_t ts, std::int64_t dur, std::string tid = "1") {
  Event e;
  e.category = Category::cpu_op;
  e.name = std::move(name);
  e.ts_ns = ts;
  e.dur_ns = dur;
  e.pid = "1";
  e.tid = std::move(tid);
  return e;
}

TEST(Validate, NestedAndAdjacentEventsAreValid) {
  Trace t;
  t.events = {x("parent", 0, 100), x("child", 10, 20), x("grandchild", 10, 20), x("next", 30, 70), x("after", 100, 5)};
  EXPECT_TRUE(validate(t).empty());
}

TEST(Validate, ChildOverrunningItsParentIsReported) {
  Trace t;
  t.events = {x("parent", 0, 100), x("child", 50, 60)};
  auto problems = validate(t);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("'child'"), std::string::npos) << problems[0];
  // The same overlap on another thread is fine.
  t.events[1].tid = "2";
  EXPECT_TRUE(validate(t).empty());
}

TEST(Validate, NegativeDurationAndBadFlows) {
  Trace t;
  t.events = {x("neg", 0, -1), x("launch", 100, 10), x("kernel", 200, 10, "7")};
  Flow good;
  good.id = 1;
  good.has_start = good.has_end = true;
  good.start_ts_ns = 100;
  good.start_pid = "1";
  good.start_tid = "1";
  good.end_ts_ns = 200;
  good.end_pid = "1";
  good.end_tid = "7";
  Flow backwards = good;
  backwards.id = 2;
  backwards.end_ts_ns = 50;
  Flow nowhere = good;
  nowhere.id = 3;
  nowhere.start_ts_ns = 150;  // no slice on thread 1 at 150 ns
  Flow half = good;
  half.id = 4;
  half.has_end = false;
  t.flows = {good, backwards, nowhere, half};
  auto problems = validate(t);
  std::string all;
  for (auto& p : problems) all += p + "\n";
  EXPECT_NE(all.find("negative duration"), std::string::npos) << all;
  EXPECT_NE(all.find("flow 2 ends at 50 ns before"), std::string::npos) << all;
  EXPECT_NE(all.find("flow 2 ends at 50 ns on pid 1 tid 7 where no slice"), std::string::npos) << all;
  EXPECT_NE(all.find("flow 3 starts at 150 ns"), std::string::npos) << all;
  EXPECT_NE(all.find("flow 4 has no 'f'"), std::string::npos) << all;
  EXPECT_EQ(all.find("flow 1 "), std::string::npos) << all;
  ValidateOptions relaxed;
  relaxed.require_paired_flows = false;
  std::string relaxed_all;
  for (auto& p : validate(t, relaxed)) relaxed_all += p;
  EXPECT_EQ(relaxed_all.find("flow 4"), std::string::npos);
}

}  // namespace
}  // namespace attnprof::trace
