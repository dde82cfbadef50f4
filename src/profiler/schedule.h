#pragma once
// torch.profiler's schedule: step k (counting from 0 at start()) is wait, warmup or active.
#include <attnprof/profiler.h>

namespace attnprof::profiler {

enum class StepAction { none, wait, warmup, active };

// Throws UsageError naming wait/warmup/active/repeat when a value is out of range.
void validate(const Schedule& schedule);
StepAction step_action(const Schedule& schedule, long long step);
// Steps in the whole schedule (0 when it repeats until stop()).
long long total_steps(const Schedule& schedule);

}  // namespace attnprof::profiler
