#pragma once
// Text from untrusted files (names in traces) made safe where output is written: valid UTF-8
// everywhere, no control characters in text meant for a terminal or a web page, and cuts that
// fall between code points. Every output boundary uses these; none has a copy of its own.
#include <cstddef>
#include <string>
#include <string_view>

namespace attnprof {

// One step through UTF-8 text: the code point starting at text[at] when `valid`, else the
// maximal subpart of a well-formed sequence found there (at least one byte), which U+FFFD
// replaces as a whole (the Unicode Standard's "substitution of maximal subparts", 3.9): "\xE2\x82"
// (a cut euro sign) is one U+FFFD, "\xED\xA0\x80" (an encoded surrogate) three, "\xFF" one.
struct Utf8Step {
  std::size_t length;
  bool valid;
};
Utf8Step utf8_step(std::string_view text, std::size_t at);  // at < text.size()

bool is_valid_utf8(std::string_view text);

// `text` with each invalid part replaced by U+FFFD; valid text comes back unchanged.
std::string valid_utf8(std::string_view text);
void make_valid_utf8(std::string& text);  // in place; no copy when `text` is already valid

// valid_utf8, and each control character written as a visible escape, so text from a trace can
// neither end a C string (NUL), break a line or a table row (\n, \r), nor drive a terminal
// (ESC, CSI): NUL, tab, newline and carriage return become \0 \t \n \r; the other C0 controls and
// DEL \x01..\x1f, \x7f; the C1 controls U+0080..U+009F \u0080..\u009f. Backslashes stay as they
// are (the escapes are for a reader, not for a parser), so applying it twice changes nothing.
// Newlines::keep leaves '\n' as it is, for whole lines of text put together by attnprof.
enum class Newlines { escape, keep };
std::string printable(std::string_view text, Newlines newlines = Newlines::escape);

// Code points in `text` (each invalid part counted as the one U+FFFD it becomes).
std::size_t utf8_columns(std::string_view text);

// The longest prefix of `text` of at most `max_bytes` bytes that ends between two code points.
std::string_view utf8_prefix_bytes(std::string_view text, std::size_t max_bytes);

// The longest prefix of `text` of at most `max_columns` code points.
std::string_view utf8_prefix_columns(std::string_view text, std::size_t max_columns);

// `text` cut to at most `max_columns` code points, `ellipsis` (counted in them) ending it when
// something was cut: ("attention", 6, "...") -> "att...". The cut falls between code points.
// A limit with no room for the ellipsis gives the plain prefix: ("attention", 2, "...") -> "at".
std::string cut_to_columns(std::string_view text, std::size_t max_columns, std::string_view ellipsis = "\u2026");

}  // namespace attnprof
