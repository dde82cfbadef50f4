#include "trace/json_pull.h"

#include <attnprof/error.h>
#include <fmt/format.h>

#include "core/utf8.h"

namespace attnprof::trace {
namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string printable(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return fmt::format("'{}'", c);
  return fmt::format("byte 0x{:02x}", u);
}

}  // namespace

JsonPull::JsonPull(ByteSource& source, std::string name, const ReadLimits& limits)
    : source_(source), name_(std::move(name)), limits_(limits), buf_(1 << 20) {}

void JsonPull::fail(const std::string& what) {
  throw UsageError(fmt::format("{}: {} (at byte {})", name_, what, offset()));
}

void JsonPull::fail_limit(const std::string& what, const char* limit) {
  throw LimitExceeded(fmt::format("{}: {} (at byte {})", name_, what, offset()), limit);
}

bool JsonPull::refill() {
  if (eof_) return false;
  consumed_ += end_;
  pos_ = end_ = 0;
  end_ = source_.read(buf_.data(), buf_.size());
  if (end_ == 0) eof_ = true;
  if (consumed_ + end_ > limits_.max_trace_bytes) {
    pos_ = static_cast<std::size_t>(limits_.max_trace_bytes - consumed_);
    fail_limit(fmt::format("the JSON text is longer than {} bytes", limits_.max_trace_bytes), "max_trace_bytes");
  }
  return end_ > 0;
}

char JsonPull::get() {
  if (pos_ == end_ && !refill()) fail("truncated: the JSON ends early");
  return buf_[pos_++];
}

void JsonPull::skip_space_slow(std::string* keep) {
  for (;;) {
    std::size_t start = pos_;
    while (pos_ < end_ && is_space(buf_[pos_])) ++pos_;
    if (keep) {
      keep->append(buf_.data() + start, pos_ - start);
      check_kept(*keep);
    }
    if (pos_ < end_ || !refill()) return;
  }
}

void JsonPull::expect(char c, const char* where) {
  char got = peek();
  if (pos_ == end_) fail(fmt::format("truncated: the JSON ends {}", where));
  if (got != c) fail(fmt::format("not valid JSON: expected '{}' {} but found {}", c, where, printable(got)));
  ++pos_;
}

void JsonPull::read_string(std::string& out) {
  out.clear();
  expect('"', "at the start of a string");
  for (;;) {
    if (pos_ == end_ && !refill()) fail("truncated: the JSON ends inside a string");
    // Copy the run of plain bytes in one go.
    std::size_t start = pos_;
    while (pos_ < end_) {
      char c = buf_[pos_];
      if (c == '"' || c == '\\') break;
      ++pos_;
    }
    out.append(buf_.data() + start, pos_ - start);
    if (out.size() > limits_.max_string_bytes) string_too_long();
    if (pos_ == end_) continue;
    char c = buf_[pos_++];
    if (c == '"') {
      make_valid_utf8(out);  // names reach every output; invalid bytes stop here as U+FFFD
      return;
    }
    char e = get();
    switch (e) {
      case '"': out.push_back('"'); break;
      case '\\': out.push_back('\\'); break;
      case '/': out.push_back('/'); break;
      case 'b': out.push_back('\b'); break;
      case 'f': out.push_back('\f'); break;
      case 'n': out.push_back('\n'); break;
      case 'r': out.push_back('\r'); break;
      case 't': out.push_back('\t'); break;
      case 'u': {
        auto hex4 = [&]() {
          std::uint32_t v = 0;
          for (int k = 0; k < 4; ++k) {
            int h = hex_value(get());
            if (h < 0) fail("not valid JSON: bad \\u escape in a string");
            v = v * 16 + static_cast<std::uint32_t>(h);
          }
          return v;
        };
        std::uint32_t cp = hex4();
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          // A high surrogate wants \uDC00-\uDFFF next; anything else makes it U+FFFD.
          if (pos_ == end_) refill();
          if (pos_ < end_ && buf_[pos_] == '\\') {
            ++pos_;
            if (get() != 'u') fail("not valid JSON: bad escape after a \\u surrogate");
            std::uint32_t low = hex4();
            if (low >= 0xDC00 && low <= 0xDFFF) {
              append_utf8(out, 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00));
            } else {
              append_utf8(out, 0xFFFD);
              append_utf8(out, (low >= 0xD800 && low <= 0xDFFF) ? 0xFFFD : low);
            }
          } else {
            append_utf8(out, 0xFFFD);
          }
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          append_utf8(out, 0xFFFD);
        } else {
          append_utf8(out, cp);
        }
        break;
      }
      default: fail(fmt::format("not valid JSON: bad escape '\\{}' in a string", e));
    }
  }
}

void JsonPull::check_kept(const std::string& kept) {
  if (kept.size() > limits_.max_string_bytes)
    fail_limit(fmt::format("a value kept as JSON text is longer than {} bytes", limits_.max_string_bytes),
               "max_string_bytes");
}

void JsonPull::string_too_long() {
  fail_limit(fmt::format("a string is longer than {} bytes", limits_.max_string_bytes), "max_string_bytes");
}

void JsonPull::raw_string(std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  if (get() != '"') fail("not valid JSON: expected a string");
  if (out) out->push_back('"');
  std::uint64_t length = 0;  // bytes between the quotes, as written
  for (;;) {
    if (pos_ == end_ && !refill()) fail("truncated: the JSON ends inside a string");
    std::size_t start = pos_;
    while (pos_ < end_) {
      unsigned char u = static_cast<unsigned char>(buf_[pos_]);
      if (u == '"' || u == '\\' || u < 0x20) break;
      ++pos_;
    }
    if (out) out->append(buf_.data() + start, pos_ - start);
    length += pos_ - start;
    if (length > limits_.max_string_bytes) string_too_long();
    if (pos_ == end_) continue;
    char c = buf_[pos_++];
    if (c == '"') {
      if (out) out->push_back('"');
      return;
    }
    ++length;
    if (c == '\\') {
      char e = get();
      length += e == 'u' ? 5 : 1;
      if (out) {
        out->push_back('\\');
        out->push_back(e);
      }
      if (e == 'u') {
        for (int k = 0; k < 4; ++k) {
          char h = get();
          if (hex_value(h) < 0) fail("not valid JSON: bad \\u escape in a string");
          if (out) out->push_back(h);
        }
      } else if (e != '"' && e != '\\' && e != '/' && e != 'b' && e != 'f' && e != 'n' && e != 'r' && e != 't') {
        fail(fmt::format("not valid JSON: bad escape '\\{}' in a string", e));
      }
    } else if (out) {
      // Raw control characters (some writers emit them) are kept escaped so our output stays valid JSON.
      out->append("\\u00");
      out->push_back(kHex[static_cast<unsigned char>(c) >> 4]);
      out->push_back(kHex[static_cast<unsigned char>(c) & 15]);
    }
  }
}

void JsonPull::raw_number(std::string* out) {
  // Fast path: the number lies inside the buffer and is followed by a delimiter.
  {
    std::size_t i = pos_;
    if (i < end_ && buf_[i] == '-') ++i;
    std::size_t digits = i;
    while (i < end_ && is_digit(buf_[i])) ++i;
    bool ok = i > digits && !(buf_[digits] == '0' && i - digits > 1);
    if (ok && i < end_ && buf_[i] == '.') {
      std::size_t f = ++i;
      while (i < end_ && is_digit(buf_[i])) ++i;
      ok = i > f;
    }
    if (ok && i < end_ && buf_[i] != 'e' && buf_[i] != 'E' && !is_digit(buf_[i]) && buf_[i] != '.' &&
        i - pos_ <= limits_.max_number_chars) {
      if (out) out->append(buf_.data() + pos_, i - pos_);
      pos_ = i;
      return;
    }
  }
  // Slow path: byte by byte across refills, counting, so an endless number is refused at the limit.
  std::uint64_t length = 0;
  auto peek_raw = [&]() -> char {
    if (pos_ == end_ && !refill()) return '\0';
    return buf_[pos_];
  };
  auto take = [&]() {
    if (++length > limits_.max_number_chars)
      fail_limit(fmt::format("a number is longer than {} characters", limits_.max_number_chars), "max_number_chars");
    if (out) out->push_back(buf_[pos_]);
    ++pos_;
  };
  if (peek_raw() == '-') take();
  char c = peek_raw();
  if (c == '0') {
    take();
  } else if (c >= '1' && c <= '9') {
    while (is_digit(peek_raw())) take();
  } else {
    fail("not valid JSON: a number has no digits");
  }
  if (peek_raw() == '.') {
    take();
    if (!is_digit(peek_raw())) fail("not valid JSON: a number has no digits after '.'");
    while (is_digit(peek_raw())) take();
  }
  c = peek_raw();
  if (c == 'e' || c == 'E') {
    take();
    c = peek_raw();
    if (c == '+' || c == '-') take();
    if (!is_digit(peek_raw())) fail("not valid JSON: a number has no exponent digits");
    while (is_digit(peek_raw())) take();
  }
}

void JsonPull::read_number(std::string& out) {
  out.clear();
  skip_space(nullptr);
  raw_number(&out);
}

void JsonPull::literal(std::string* out) {
  char first = get();
  const char* word = first == 't' ? "true" : first == 'f' ? "false" : "null";
  if (out) out->push_back(first);
  for (const char* p = word + 1; *p; ++p) {
    char c = get();
    if (c != *p) fail(fmt::format("not valid JSON: unexpected {}", printable(first)));
    if (out) out->push_back(c);
  }
}

void JsonPull::value(std::string* out) {
  // Iterative, so a hostile file cannot exhaust the stack.
  enum class State { value, value_or_close, key_or_close, key, after };
  std::vector<char> stack;
  State state = State::value;
  skip_space(nullptr);
  for (;;) {
    if (out) check_kept(*out);
    if (state != State::value || !stack.empty()) skip_space(out);
    if (pos_ == end_ && !refill()) fail("truncated: the JSON ends inside a value");
    char c = buf_[pos_];
    switch (state) {
      case State::value_or_close:
        if (c == ']') {
          ++pos_;
          if (out) out->push_back(c);
          stack.pop_back();
          state = State::after;
          break;
        }
        state = State::value;
        [[fallthrough]];
      case State::value:
        if (c == '{' || c == '[') {
          if (stack.size() >= limits_.max_depth)
            fail_limit(fmt::format("JSON nested deeper than {} levels", limits_.max_depth), "max_depth");
          ++pos_;
          if (out) out->push_back(c);
          stack.push_back(c);
          state = c == '{' ? State::key_or_close : State::value_or_close;
        } else if (c == '"') {
          raw_string(out);
          state = State::after;
        } else if (c == '-' || is_digit(c)) {
          raw_number(out);
          state = State::after;
        } else if (c == 't' || c == 'f' || c == 'n') {
          literal(out);
          state = State::after;
        } else {
          fail(fmt::format("not valid JSON: unexpected {} where a value should be", printable(c)));
        }
        break;
      case State::key_or_close:
        if (c == '}') {
          ++pos_;
          if (out) out->push_back(c);
          stack.pop_back();
          state = State::after;
          break;
        }
        [[fallthrough]];
      case State::key:
        if (c != '"') fail(fmt::format("not valid JSON: expected a key but found {}", printable(c)));
        raw_string(out);
        skip_space(out);
        if (get() != ':') fail("not valid JSON: expected ':' after a key");
        if (out) out->push_back(':');
        state = State::value;
        break;
      case State::after:
        if (stack.empty()) return;
        if (c == ',') {
          ++pos_;
          if (out) out->push_back(c);
          state = stack.back() == '{' ? State::key : State::value;
        } else if ((c == '}' && stack.back() == '{') || (c == ']' && stack.back() == '[')) {
          ++pos_;
          if (out) out->push_back(c);
          stack.pop_back();
        } else {
          fail(fmt::format("not valid JSON: unexpected {} after a value", printable(c)));
        }
        break;
    }
    if (state == State::after && stack.empty()) return;
  }
}

void JsonPull::capture(std::string& out) {
  out.clear();  // check_kept measures the whole of `out`
  value(&out);
  make_valid_utf8(out);  // kept verbatim and written back out: invalid bytes inside its strings become U+FFFD
}

void JsonPull::skip() { value(nullptr); }

}  // namespace attnprof::trace
