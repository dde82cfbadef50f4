#pragma once
// JSON text pieces shared by the writer and the reader.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace attnprof::trace {

// Appends `text` as a JSON string: quotes and backslashes escaped, control characters as \u00XX,
// valid UTF-8 passed through, each invalid part replaced by U+FFFD (utf8_step in core/utf8.h).
void append_json_string(std::string& out, std::string_view text);

// Appends integer nanoseconds as microseconds with exactly three decimals: 1234567 -> "1234.567".
void append_us(std::string& out, std::int64_t ns);

// Parses a JSON number of microseconds into integer nanoseconds (rounded half away from zero),
// exactly for plain decimals ("5165424235049.688"). nullopt when `text` is not a number or overflows.
std::optional<std::int64_t> parse_us_as_ns(std::string_view text);

// A JSON integer ("-12"); nullopt for anything else (fractions, exponents, overflow).
std::optional<std::int64_t> parse_integer(std::string_view text);

// pid/tid as written: a value that looks like an integer is written bare, anything else quoted.
bool looks_like_integer(std::string_view text);

}  // namespace attnprof::trace
