#pragma once
// Checks a Trace against the rules viewers rely on (Trace Event Format + Kineto's conventions).
#include <attnprof/trace.h>

#include <string>
#include <vector>

namespace attnprof::trace {

struct ValidateOptions {
  // Every flow has both its 's' and its 'f' (true for our traces; PyTorch's leave some unpaired).
  bool require_paired_flows = true;
  std::size_t max_problems = 20;
};

// One line per problem, empty when the trace is valid:
//  - X events have dur >= 0 and, per (pid, tid), nest strictly (a child ends no later than its parent);
//  - instants have dur 0;
//  - a flow's ids are unique per phase, its 'f' is not before its 's', and each end lies on an X
//    event of its thread (the launch slice and the device slice).
std::vector<std::string> validate(const Trace& trace, const ValidateOptions& options = {});

}  // namespace attnprof::trace
