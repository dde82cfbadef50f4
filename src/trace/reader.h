#pragma once
// Reads plain or gzipped Kineto / Chrome JSON traces (PyTorch's and ours) into the Trace model,
// streaming: memory grows with the events kept, never with the file's text.
// Every bad file (missing, empty, truncated, not JSON, not a trace, corrupt gzip) is one
// UsageError line naming the file and the problem.
#include <attnprof/trace.h>

#include <cstddef>
#include <functional>
#include <string>

namespace attnprof::trace {

Trace read_trace_file(const std::string& path);
Trace read_trace_bytes(const std::string& name, const char* data, std::size_t size);

// Streaming form: each X/i event goes to `on_event` as it is read (not stored in `out`); the
// header, metadata and flows are filled into `out`. The Event is the reader's scratch object:
// the callback may move from it; its buffers are reused for the next event otherwise.
// Flows are paired by id once the file is read: the k-th 's' of an id with its k-th 'f' in time
// order. keep_flows = false skips them (attnprof inspect does not need them).
void read_trace_file(const std::string& path, Trace& out, const std::function<void(Event&)>& on_event,
                     bool keep_flows = true);

}  // namespace attnprof::trace
