#include "trace/json_text.h"

#include <charconv>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "core/utf8.h"

namespace attnprof::trace {

void append_json_string(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t run = i;
    while (run < text.size()) {
      unsigned char c = static_cast<unsigned char>(text[run]);
      if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80) break;
      ++run;
    }
    out.append(text.data() + i, run - i);
    i = run;
    if (i >= text.size()) break;
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
      ++i;
    } else if (c < 0x20) {
      out.append("\\u00");
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
      ++i;
    } else {
      Utf8Step step = utf8_step(text, i);
      if (step.valid) {
        out.append(text.data() + i, step.length);
      } else {
        out.append("\xEF\xBF\xBD");  // U+FFFD as UTF-8, so a re-read and re-write gives the same bytes
      }
      i += step.length;
    }
  }
  out.push_back('"');
}

void append_us(std::string& out, std::int64_t ns) {
  char buf[32];
  char* end = buf + sizeof buf;
  char* p = end;
  bool negative = ns < 0;
  // Work in unsigned so INT64_MIN is representable.
  std::uint64_t v = negative ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
  for (int k = 0; k < 3; ++k) {
    *--p = static_cast<char>('0' + v % 10);
    v /= 10;
  }
  *--p = '.';
  do {
    *--p = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  if (negative) *--p = '-';
  out.append(p, static_cast<std::size_t>(end - p));
}

std::optional<std::int64_t> parse_integer(std::string_view text) {
  std::int64_t v = 0;
  if (text.empty()) return std::nullopt;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  if (text[0] == '-' && text.size() == 1) return std::nullopt;
  return v;
}

std::optional<std::int64_t> parse_us_as_ns(std::string_view text) {
  // Fast exact path: -?digits(.digits)?
  std::size_t i = 0;
  bool negative = false;
  if (i < text.size() && text[i] == '-') {
    negative = true;
    ++i;
  }
  std::size_t int_begin = i;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  std::size_t int_end = i;
  std::size_t frac_begin = i, frac_end = i;
  if (i < text.size() && text[i] == '.') {
    frac_begin = ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    frac_end = i;
  }
  if (i == text.size() && int_end > int_begin && (frac_begin == frac_end ? frac_begin == int_end : true)) {
    // Accumulate |ns| unsigned with overflow checks, so every value the writer prints (any int64)
    // reads back exactly.
    std::uint64_t v = 0;
    bool overflow = false;
    auto push_digit = [&](int digit) {
      overflow = overflow || __builtin_mul_overflow(v, std::uint64_t{10}, &v) ||
                 __builtin_add_overflow(v, static_cast<std::uint64_t>(digit), &v);
    };
    for (std::size_t k = int_begin; k < int_end; ++k) push_digit(text[k] - '0');
    std::size_t k = frac_begin;
    for (int d = 0; d < 3; ++d) push_digit(k < frac_end ? text[k++] - '0' : 0);
    if (k < frac_end && text[k] >= '5') overflow = overflow || __builtin_add_overflow(v, std::uint64_t{1}, &v);
    constexpr std::uint64_t kMax = static_cast<std::uint64_t>(INT64_MAX);
    if (overflow || v > kMax + (negative ? 1 : 0)) return std::nullopt;
    if (negative) return v == kMax + 1 ? INT64_MIN : -static_cast<std::int64_t>(v);
    return static_cast<std::int64_t>(v);
  }
  // Exponents, long integers: through a double (exact enough far below 2^53 ns).
  std::string copy(text);
  char* end = nullptr;
  double d = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size() || copy.empty() || !std::isfinite(d)) return std::nullopt;
  double ns = std::round(d * 1000.0);
  if (ns >= 9.2e18 || ns <= -9.2e18) return std::nullopt;
  return static_cast<std::int64_t>(ns);
}

bool looks_like_integer(std::string_view text) {
  if (text.empty() || text.size() > 19) return false;
  std::size_t i = text[0] == '-' ? 1 : 0;
  if (i == text.size()) return false;
  if (text[i] == '0' && text.size() > i + 1) return false;  // "007" stays a string
  for (; i < text.size(); ++i)
    if (text[i] < '0' || text[i] > '9') return false;
  return true;
}

}  // namespace attnprof::trace
