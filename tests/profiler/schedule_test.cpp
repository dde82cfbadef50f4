#include <attnprof/error.h>
#include <gtest/gtest.h>

#include "profiler/schedule.h"

namespace attnprof::profiler {
namespace {

TEST(Schedule, BlogScheduleIsWaitWarmupThenThreeActiveSteps) {
  Schedule s{1, 1, 3, 1};
  EXPECT_EQ(step_action(s, 0), StepAction::wait);
  EXPECT_EQ(step_action(s, 1), StepAction::warmup);
  EXPECT_EQ(step_action(s, 2), StepAction::active);
  EXPECT_EQ(step_action(s, 4), StepAction::active);
  EXPECT_EQ(step_action(s, 5), StepAction::none);
  EXPECT_EQ(total_steps(s), 5);
}

TEST(Schedule, RepeatCyclesAndZeroMeansForever) {
  Schedule twice{2, 0, 1, 2};
  std::vector<StepAction> got;
  for (int i = 0; i < 7; ++i) got.push_back(step_action(twice, i));
  EXPECT_EQ(got, (std::vector<StepAction>{StepAction::wait, StepAction::wait, StepAction::active, StepAction::wait,
                                          StepAction::wait, StepAction::active, StepAction::none}));
  Schedule forever{0, 0, 1, 0};
  EXPECT_EQ(step_action(forever, 1000), StepAction::active);
  EXPECT_EQ(total_steps(forever), 0);
}

TEST(Schedule, RejectsOutOfRangeValuesNamingTheFlag) {
  try {
    validate(Schedule{1, 1, 0, 1});
    FAIL() << "active 0 accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("active 0"), std::string::npos) << e.what();
  }
  EXPECT_THROW(validate(Schedule{-1, 1, 1, 1}), UsageError);
  EXPECT_THROW(validate(Schedule{1, 1, 1, -2}), UsageError);
}

}  // namespace
}  // namespace attnprof::profiler
