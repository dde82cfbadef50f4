#pragma once
// Command-line text helpers shared by the bench executables.
#include <sstream>
#include <string>
#include <vector>

namespace attnprof::bench {

// "a,b,,c" → {"a", "b", "c"} (empty parts dropped).
inline std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, sep))
    if (!part.empty()) parts.push_back(part);
  return parts;
}

}  // namespace attnprof::bench
