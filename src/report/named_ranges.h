#pragma once
// The ranges per-range work reads: attnprof's own `attn_fwd` by default, or the names a user gives
// (`inspect --range NAME`): a record_function/NVTX range (a `user_annotation` on the host; its
// `gpu_user_annotation` is the GPU-side mirror of the same range) or a module as torch records it
// with `with_modules`/`with_stack` (a `python_function` named "nn.Module: NAME").
#include <attnprof/trace.h>

#include <string>
#include <vector>

#include "report/timeline.h"

namespace attnprof::report {

// {"attn_fwd"}: what the per-range work reads without --range.
const std::vector<std::string>& default_range_names();

// A host event that is one of the named ranges: a user_annotation of that name, or a
// python_function named "nn.Module: " + name.
bool is_named_range(trace::Category category, const std::string& name, const std::vector<std::string>& names);

// Throws UsageError naming the first name that matches no host range in the timeline, with a
// few range names the trace does have ("ProfilerStep#N" counted once); a name whose only events
// are gpu_user_annotation spans is refused too: the work is attributed through the host range
// that launched it. `path` is the trace, for the message.
void check_range_names(const Timeline& timeline, const std::vector<std::string>& names, const std::string& path);

}  // namespace attnprof::report
