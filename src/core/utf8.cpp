#include "core/utf8.h"

#include <cstdint>
#include <cstring>

namespace attnprof {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

unsigned char byte_at(std::string_view text, std::size_t i) { return static_cast<unsigned char>(text[i]); }

// The first invalid part at or after `from`, text.size() when there is none. ASCII is skipped
// eight bytes at a time without decoding: most names are plain ASCII, and the reader checks
// every string it keeps.
std::size_t first_invalid(std::string_view text, std::size_t from) {
  constexpr std::uint64_t kHighBits = 0x8080808080808080ull;
  std::size_t i = from;
  while (i < text.size()) {
    std::uint64_t word;
    if (i + sizeof word <= text.size()) {
      std::memcpy(&word, text.data() + i, sizeof word);
      if ((word & kHighBits) == 0) {
        i += sizeof word;
        continue;
      }
    }
    if (byte_at(text, i) < 0x80) {
      ++i;
      continue;
    }
    Utf8Step s = utf8_step(text, i);
    if (!s.valid) return i;
    i += s.length;
  }
  return text.size();
}

void append_escape(std::string& out, const char* prefix, unsigned value, int digits) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += prefix;
  for (int d = digits - 1; d >= 0; --d) out.push_back(kHex[(value >> (4 * d)) & 15]);
}

}  // namespace

Utf8Step utf8_step(std::string_view text, std::size_t at) {
  const unsigned char lead = byte_at(text, at);
  if (lead < 0x80) return {1, true};
  // Well-formed sequences (the Unicode Standard, table 3-7): the lead byte fixes how many
  // continuation bytes follow and the range of the first; the others are 80..BF.
  std::size_t continuation;
  unsigned char low = 0x80, high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    continuation = 1;
  } else if (lead == 0xE0) {
    continuation = 2;
    low = 0xA0;  // no overlong 3-byte forms
  } else if (lead == 0xED) {
    continuation = 2;
    high = 0x9F;  // no surrogates D800..DFFF
  } else if (lead >= 0xE1 && lead <= 0xEF) {
    continuation = 2;
  } else if (lead == 0xF0) {
    continuation = 3;
    low = 0x90;  // no overlong 4-byte forms
  } else if (lead >= 0xF1 && lead <= 0xF3) {
    continuation = 3;
  } else if (lead == 0xF4) {
    continuation = 3;
    high = 0x8F;  // nothing above U+10FFFF
  } else {
    return {1, false};  // 80..C1 and F5..FF never start a sequence
  }
  for (std::size_t k = 1; k <= continuation; ++k) {
    if (at + k >= text.size()) return {k, false};
    const unsigned char c = byte_at(text, at + k);
    if (c < low || c > high) return {k, false};
    low = 0x80;
    high = 0xBF;
  }
  return {continuation + 1, true};
}

bool is_valid_utf8(std::string_view text) { return first_invalid(text, 0) == text.size(); }

std::string valid_utf8(std::string_view text) {
  std::string out(text);
  make_valid_utf8(out);
  return out;
}

void make_valid_utf8(std::string& text) {
  std::size_t bad = first_invalid(text, 0);
  if (bad == text.size()) return;
  std::string out(text, 0, bad);
  out.reserve(text.size() + 8);
  std::size_t i = bad;
  while (i < text.size()) {
    Utf8Step s = utf8_step(text, i);
    if (s.valid) {
      out.append(text, i, s.length);
    } else {
      out += kReplacement;
    }
    i += s.length;
  }
  text = std::move(out);
}

std::string printable(std::string_view text, Newlines newlines) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = byte_at(text, i);
    Utf8Step s = utf8_step(text, i);
    if (!s.valid) {
      out += kReplacement;
    } else if (c == '\n' && newlines == Newlines::keep) {
      out.push_back('\n');
    } else if (c < 0x20 || c == 0x7F) {
      switch (c) {
        case 0: out += "\\0"; break;
        case '\t': out += "\\t"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        default: append_escape(out, "\\x", c, 2);
      }
    } else if (c == 0xC2 && byte_at(text, i + 1) < 0xA0) {
      append_escape(out, "\\u", byte_at(text, i + 1), 4);  // C1 control U+0080..U+009F
    } else {
      out.append(text, i, s.length);
    }
    i += s.length;
  }
  return out;
}

std::size_t utf8_columns(std::string_view text) {
  std::size_t columns = 0;
  for (std::size_t i = 0; i < text.size(); i += utf8_step(text, i).length) ++columns;
  return columns;
}

std::string_view utf8_prefix_bytes(std::string_view text, std::size_t max_bytes) {
  std::size_t end = 0;
  while (end < text.size()) {
    std::size_t next = end + utf8_step(text, end).length;
    if (next > max_bytes) break;
    end = next;
  }
  return text.substr(0, end);
}

std::string_view utf8_prefix_columns(std::string_view text, std::size_t max_columns) {
  std::size_t end = 0;
  for (std::size_t columns = 0; end < text.size() && columns < max_columns; ++columns)
    end += utf8_step(text, end).length;
  return text.substr(0, end);
}

std::string cut_to_columns(std::string_view text, std::size_t max_columns, std::string_view ellipsis) {
  if (utf8_columns(text) <= max_columns) return std::string(text);
  const std::size_t room = utf8_columns(ellipsis);
  if (max_columns < room) return std::string(utf8_prefix_columns(text, max_columns));
  return std::string(utf8_prefix_columns(text, max_columns - room)) + std::string(ellipsis);
}

}  // namespace attnprof
