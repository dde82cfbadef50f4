#pragma once
// Bytes of a trace file, plain or gzip (detected by its magic bytes, whatever the extension).
// Errors are UsageError lines naming the file.
#include <cstddef>
#include <cstdio>
#include <memory>
#include <string>

namespace attnprof::trace {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Fills up to `capacity` bytes; 0 only at the end of the data.
  virtual std::size_t read(char* out, std::size_t capacity) = 0;
  // Bytes of the file consumed so far (compressed bytes for gzip), for error messages.
  virtual std::size_t file_offset() const = 0;
};

// Opens `path`, read once from the start (pipes, FIFOs and /dev/stdin work; nothing seeks); "-" is
// standard input. Throws UsageError when it cannot be opened or is empty.
std::unique_ptr<ByteSource> open_trace_bytes(const std::string& path);
// How messages name `path`: "standard input" for "-", else the path.
std::string trace_display_name(const std::string& path);
// In-memory bytes (tests, the fuzzer); `name` stands for the file in messages.
std::unique_ptr<ByteSource> memory_trace_bytes(std::string name, const char* data, std::size_t size);

}  // namespace attnprof::trace
