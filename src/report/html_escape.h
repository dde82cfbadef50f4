#pragma once
// Text made safe for HTML and SVG element content and attribute values: valid UTF-8 with control
// characters shown as escapes (printable, core/utf8.h), then the markup characters as entities.
#include <string>
#include <string_view>

#include "core/utf8.h"

namespace attnprof::report {

inline std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : printable(text)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace attnprof::report
