#include "profiler/schedule.h"

#include <attnprof/error.h>

#include <string>

namespace attnprof::profiler {

void validate(const Schedule& s) {
  auto check = [](int value, int minimum, const char* parameter) {
    if (value < minimum || value > 1000000)
      throw UsageError(std::string(parameter) + " " + std::to_string(value) + ": must be between " +
                       std::to_string(minimum) + " and 1000000");
  };
  check(s.wait, 0, "wait");
  check(s.warmup, 0, "warmup");
  check(s.active, 1, "active");
  check(s.repeat, 0, "repeat");
}

long long total_steps(const Schedule& s) {
  return s.repeat == 0 ? 0 : static_cast<long long>(s.wait + s.warmup + s.active) * s.repeat;
}

StepAction step_action(const Schedule& s, long long step) {
  long long cycle = s.wait + s.warmup + s.active;
  if (step < 0 || (s.repeat > 0 && step >= cycle * s.repeat)) return StepAction::none;
  long long m = step % cycle;
  if (m < s.wait) return StepAction::wait;
  if (m < s.wait + s.warmup) return StepAction::warmup;
  return StepAction::active;
}

}  // namespace attnprof::profiler
