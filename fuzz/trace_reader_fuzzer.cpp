// libFuzzer target for the trace reader: any bytes (plain or gzip) either parse into a Trace or
// raise UsageError; never a crash, a leak or another exception. What parses must also survive the
// writer round trip byte for byte, and the reports must not crash on it; names come out valid
// UTF-8 and the text table free of control characters. The reader runs under ReadLimits small
// enough that libFuzzer's inputs (up to 64 KiB, a gzip of which inflates to about 64 MiB) reach
// every limit while memory stays far below -rss_limit_mb.
#include <attnprof/error.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/utf8.h"
#include "report/key_averages.h"
#include "report/steps.h"
#include "trace/reader.h"
#include "trace/validate.h"
#include "trace/writer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace attnprof;
  trace::ReadLimits limits;
  limits.max_string_bytes = std::uint64_t{1} << 20;
  limits.max_trace_bytes = std::uint64_t{4} << 20;
  limits.max_events = 50000;
  trace::Trace t;
  try {
    t = trace::read_trace_bytes("fuzz", reinterpret_cast<const char*>(data), size, limits);
  } catch (const UsageError&) {
    return 0;  // the expected outcome for bad input (a LimitExceeded is one)
  }
  std::string first = trace::to_json(t);
  trace::Trace back;
  try {
    // Our output may be longer than the input (escapes, layout): read back under the defaults.
    back = trace::read_trace_bytes("rewrite", first.data(), first.size());
  } catch (const UsageError& e) {
    std::fprintf(stderr, "our own output did not read back: %s\n", e.what());
    std::abort();
  }
  if (trace::to_json(back) != first) {
    std::fprintf(stderr, "write -> read -> write changed the bytes\n");
    std::abort();
  }
  (void)trace::validate(t);
  (void)report::summarize_steps(t);
  (void)report::summarize_forwards(t);
  report::KeyAverages k = report::key_averages(t, "device_time_total", 50);
  // Whatever the bytes, names come out valid UTF-8, and the text table holds no control
  // character but its line ends (a NUL would cut it short, an ESC drive the terminal).
  for (const trace::Event& e : t.events) {
    if (!is_valid_utf8(e.name)) {
      std::fprintf(stderr, "an event name read from the trace is not valid UTF-8\n");
      std::abort();
    }
  }
  const std::string table = report::render_text(k);
  if (printable(table, Newlines::keep) != table) {
    std::fprintf(stderr, "the key_averages table holds a control character or invalid UTF-8\n");
    std::abort();
  }
  (void)report::render_json_rows(k);
  return 0;
}
