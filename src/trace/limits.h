#pragma once
// How much of an untrusted trace the reader accepts. Each limit is checked while the bytes stream
// in, before anything past it is buffered, so a hostile file is refused in bounded time and memory.
#include <attnprof/error.h>

#include <cstdint>
#include <string>

namespace attnprof::trace {

struct ReadLimits {
  // Bytes of one JSON string (decoded), and of one arg or top-level value kept as raw JSON text.
  std::uint64_t max_string_bytes = std::uint64_t{16} << 20;
  // Characters of one JSON number.
  std::uint64_t max_number_chars = 400;
  // Levels of nested arrays and objects inside one value.
  std::uint64_t max_depth = 1000;
  // Bytes of JSON text read (after gunzip for a .gz file).
  std::uint64_t max_trace_bytes = std::uint64_t{16} << 30;
  // Entries of the "traceEvents" array.
  std::uint64_t max_events = 50'000'000;
};

// A file over one of the ReadLimits. what() ends "; the read limit NAME raises it"; a front end
// with its own name for the limit (attnprof's --max-string-bytes) words it from detail() and limit().
class LimitExceeded : public UsageError {
 public:
  LimitExceeded(std::string detail, const char* limit)
      : UsageError(detail + "; the read limit " + limit + " raises it"), detail_(std::move(detail)), limit_(limit) {}
  const std::string& detail() const { return detail_; }
  const char* limit() const { return limit_; }  // the ReadLimits field's name, e.g. "max_string_bytes"

 private:
  std::string detail_;
  const char* limit_;
};

}  // namespace attnprof::trace
