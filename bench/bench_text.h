#pragma once
// Command-line text helpers shared by the bench executables.
#include <cstring>
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

// The value after `name` on the command line ("--seq 1024"), or fallback when it is not there.
inline long option(int argc, char** argv, const char* name, long fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::stol(argv[i + 1]);
  }
  return fallback;
}
inline std::string text_option(int argc, char** argv, const char* name, const char* fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  }
  return fallback;
}

}  // namespace attnprof::bench
