#pragma once
// Reads plain or gzipped Kineto / Chrome JSON traces (PyTorch's and ours) into the Trace model,
// streaming: memory grows with the events kept, never with the file's text.
// Every bad file (missing, empty, truncated, not JSON, not a trace, corrupt gzip, a negative or
// overflowing duration) is one UsageError line naming the file and the problem; a file over one of
// `limits` is a LimitExceeded (trace/limits.h). The path "-" reads standard input, in one pass.
#include <attnprof/trace.h>

#include <cstddef>
#include <functional>
#include <string>

#include "trace/limits.h"

namespace attnprof::trace {

Trace read_trace_file(const std::string& path, const ReadLimits& limits = {});
Trace read_trace_bytes(const std::string& name, const char* data, std::size_t size, const ReadLimits& limits = {});

// Streaming form: each X/i event goes to `on_event` as it is read (not stored in `out`); the
// header, metadata and flows are filled into `out`. The Event is the reader's scratch object:
// the callback may move from it; its buffers are reused for the next event otherwise.
// Flows are paired by id once the file is read: the k-th 's' of an id with its k-th 'f' in time
// order. keep_flows = false skips them; it is read at each flow event, so `on_event` may turn it
// off midway (attnprof inspect does once a trace is too large for the insights), dropping the
// flows kept so far.
void read_trace_file(const std::string& path, Trace& out, const std::function<void(Event&)>& on_event,
                     const bool& keep_flows = true, const ReadLimits& limits = {});

}  // namespace attnprof::trace
