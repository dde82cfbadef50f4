#pragma once
// String building for .cu files: nvcc's host pass cannot compile fmt's consteval format strings.
#include <sstream>
#include <string>

namespace attnprof::cuda {
template <class... Parts>
std::string str_cat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}
}  // namespace attnprof::cuda
