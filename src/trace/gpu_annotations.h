#pragma once
// The GPU lane's copy of each user range (attn_fwd): a gpu_user_annotation spanning, on the
// device, the work launched inside the CPU range (matched by correlation id), as Kineto draws it.
#include <attnprof/trace.h>

#include <cstdint>

namespace attnprof::trace {

// Appends one gpu_user_annotation per user range (ProfilerStep#N excepted) that launched device
// work; returns how many. Needs the CPU ranges and the device records in one trace.
std::int64_t add_gpu_user_annotations(Trace& trace);

}  // namespace attnprof::trace
