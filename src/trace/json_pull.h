#pragma once
// A streaming JSON pull parser over a ByteSource: constant memory however large the document,
// exact raw text for values kept verbatim (RawArg), and every error a UsageError naming the file,
// the problem and the byte offset. Every ReadLimits limit is checked as the bytes arrive: a
// LimitExceeded, never a buffer grown past the limit.
#include <cstddef>
#include <string>
#include <vector>

#include "trace/input.h"
#include "trace/limits.h"

namespace attnprof::trace {

class JsonPull {
 public:
  JsonPull(ByteSource& source, std::string name, const ReadLimits& limits = {});

  // Next non-whitespace character without consuming it; '\0' at the end of the data.
  char peek() {
    skip_space(nullptr);
    return pos_ < end_ ? buf_[pos_] : '\0';
  }
  bool at_end() {
    skip_space(nullptr);
    return pos_ == end_;
  }
  bool consume_if(char c) {  // after skipping whitespace
    skip_space(nullptr);
    if (pos_ < end_ && buf_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c, const char* where);        // fails naming `where`
  void read_string(std::string& out);            // a JSON string, decoded to valid UTF-8 (U+FFFD for invalid bytes)
  void read_number(std::string& out);            // a JSON number's text
  // The exact text of the next value (any type); control characters inside strings are escaped.
  void capture(std::string& out);
  void skip();
  [[noreturn]] void fail(const std::string& what);
  // LimitExceeded naming the file, `what`, the byte offset and the ReadLimits field `limit`.
  [[noreturn]] void fail_limit(const std::string& what, const char* limit);
  const ReadLimits& limits() const { return limits_; }
  std::size_t offset() const { return consumed_ + pos_; }
  const std::string& name() const { return name_; }

 private:
  bool refill();
  char get();                  // consumes one byte; fails at the end of the data
  static bool space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
  void skip_space(std::string* keep) {
    if (pos_ < end_ && !space(buf_[pos_])) return;  // the common case, inline
    skip_space_slow(keep);
  }
  void skip_space_slow(std::string* keep);
  void value(std::string* out);  // capture (out) or skip (nullptr)
  void raw_string(std::string* out);
  [[noreturn]] void string_too_long();
  void check_kept(const std::string& kept);  // a captured value within max_string_bytes
  void raw_number(std::string* out);
  void literal(std::string* out);

  ByteSource& source_;
  std::string name_;
  ReadLimits limits_;
  std::vector<char> buf_;
  std::size_t pos_ = 0, end_ = 0, consumed_ = 0;
  bool eof_ = false;
};

}  // namespace attnprof::trace
