#pragma once
// The Chrome-trace (Kineto JSON) writer: one function per event phase, streamed through a
// buffer into an AtomicFile, gzip-compressed when the path ends in ".gz".
#include <attnprof/trace.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace attnprof::trace {

// Where the JSON text goes; flush() hands over everything buffered so far.
class ChromeTraceWriter {
 public:
  using Sink = std::function<void(std::string_view)>;
  explicit ChromeTraceWriter(Sink sink);

  // The top-level keys Kineto writes plus distributedInfo, then opens "traceEvents".
  void begin(const Trace& header);
  void complete(const Event& event);  // ph X
  void instant(const Event& event);   // ph i
  void flow_start(const Flow& flow);  // ph s
  void flow_end(const Flow& flow);    // ph f
  void metadata(const Metadata& m);   // ph M
  // Closes "traceEvents" and the document; traceName follows the events, as Kineto does.
  void end(const Trace& header);

 private:
  void open_event();
  void write_args(const Event& event);
  void maybe_flush();
  Sink sink_;
  std::string buffer_;
  bool first_event_ = true;
};

// The whole trace: metadata, then events (X and i) in order, then flows ('s' then 'f' per flow).
void write_trace(ChromeTraceWriter& writer, const Trace& trace);
std::string to_json(const Trace& trace);
// Writes `path` atomically; ".gz" → gzip. Throws UsageError naming `parameter` for an unwritable path.
void write_trace_file(const std::string& path, const Trace& trace, std::string_view parameter = "out_dir");

}  // namespace attnprof::trace
