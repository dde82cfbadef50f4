#pragma once
// Shared by the trace tests: paths of the copied anchor traces and small file helpers.
#include <zlib.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace attnprof::testing {

inline std::string source_dir() {
  const char* dir = std::getenv("ATTNPROF_SOURCE_DIR");
  return dir ? dir : ATTNPROF_TEST_SOURCE_DIR;
}

inline std::string anchor_trace(const std::string& variant) {
  return source_dir() + "/tests/data/pytorch-traces/8_16_1024_64_" + variant + ".json.gz";
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

// Independent of the reader's own gzip code: zlib's gz* API.
inline std::string gunzip_file(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) throw std::runtime_error("gzopen " + path);
  std::string out;
  char buf[65536];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  gzclose(f);
  return out;
}

inline std::string temp_dir() {
  const char* t = std::getenv("TMPDIR");
  return t ? t : "/tmp";
}

}  // namespace attnprof::testing
