#include "trace/input.h"

#include <attnprof/error.h>
#include <fmt/format.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace attnprof::trace {
namespace {

// Raw bytes: a FILE* or a memory block.
class RawInput {
 public:
  virtual ~RawInput() = default;
  virtual std::size_t read(char* out, std::size_t capacity) = 0;
};

class FileInput final : public RawInput {
 public:
  FileInput(std::FILE* f, std::string name, bool owned) : f_(f), name_(std::move(name)), owned_(owned) {}
  ~FileInput() override {
    if (owned_) std::fclose(f_);
  }
  std::size_t read(char* out, std::size_t capacity) override {
    std::size_t n = std::fread(out, 1, capacity, f_);
    if (n == 0 && std::ferror(f_)) throw UsageError(fmt::format("{}: read error: {}", name_, std::strerror(errno)));
    return n;
  }

 private:
  std::FILE* f_;
  std::string name_;
  bool owned_;
};

class MemoryInput final : public RawInput {
 public:
  MemoryInput(const char* data, std::size_t size) : data_(data), size_(size) {}
  std::size_t read(char* out, std::size_t capacity) override {
    std::size_t n = std::min(capacity, size_ - pos_);
    std::memcpy(out, data_ + pos_, n);
    pos_ += n;
    return n;
  }

 private:
  const char* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

// Bytes already peeked (for the magic check) are served first.
class PlainSource final : public ByteSource {
 public:
  PlainSource(std::unique_ptr<RawInput> in, std::string head) : in_(std::move(in)), head_(std::move(head)) {}
  std::size_t read(char* out, std::size_t capacity) override {
    std::size_t n;
    if (head_pos_ < head_.size()) {
      n = std::min(capacity, head_.size() - head_pos_);
      std::memcpy(out, head_.data() + head_pos_, n);
      head_pos_ += n;
    } else {
      n = in_->read(out, capacity);
    }
    offset_ += n;
    return n;
  }
  std::size_t file_offset() const override { return offset_; }

 private:
  std::unique_ptr<RawInput> in_;
  std::string head_;
  std::size_t head_pos_ = 0;
  std::size_t offset_ = 0;
};

class GzipSource final : public ByteSource {
 public:
  GzipSource(std::unique_ptr<RawInput> in, std::string head, std::string name)
      : raw_(std::move(in), std::move(head)), name_(std::move(name)), buf_(1 << 18) {
    if (inflateInit2(&z_, 15 + 32) != Z_OK) throw UsageError(fmt::format("{}: zlib inflateInit2 failed", name_));
  }
  ~GzipSource() override { inflateEnd(&z_); }
  std::size_t read(char* out, std::size_t capacity) override {
    z_.next_out = reinterpret_cast<Bytef*>(out);
    z_.avail_out = static_cast<uInt>(capacity);
    while (z_.avail_out == capacity && !done_) {
      if (z_.avail_in == 0) {
        std::size_t n = raw_.read(buf_.data(), buf_.size());
        if (n == 0) {
          if (stream_ended_) {
            done_ = true;
            break;
          }
          throw UsageError(fmt::format("{}: truncated gzip data (the compressed stream ends early, at byte {})",
                                       name_, raw_.file_offset()));
        }
        z_.next_in = reinterpret_cast<Bytef*>(buf_.data());
        z_.avail_in = static_cast<uInt>(n);
      }
      if (stream_ended_) {
        // Another gzip member follows (concatenated .gz files are one stream).
        if (inflateReset(&z_) != Z_OK) throw UsageError(fmt::format("{}: zlib inflateReset failed", name_));
        stream_ended_ = false;
      }
      int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        stream_ended_ = true;
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        throw UsageError(fmt::format("{}: corrupt gzip data near byte {} ({})", name_, raw_.file_offset(),
                                     z_.msg != nullptr ? z_.msg : "zlib error " + std::to_string(rc)));
      }
    }
    return capacity - z_.avail_out;
  }
  std::size_t file_offset() const override { return raw_.file_offset(); }

 private:
  PlainSource raw_;
  std::string name_;
  std::vector<char> buf_;
  z_stream z_{};
  bool stream_ended_ = false;
  bool done_ = false;
};

std::unique_ptr<ByteSource> make_source(std::unique_ptr<RawInput> in, const std::string& name) {
  char magic[2];
  std::size_t n = 0;
  while (n < 2) {
    std::size_t got = in->read(magic + n, 2 - n);
    if (got == 0) break;
    n += got;
  }
  if (n == 0) throw UsageError(fmt::format("{}: empty file (expected a Kineto/Chrome JSON trace)", name));
  std::string head(magic, n);
  if (n == 2 && static_cast<unsigned char>(magic[0]) == 0x1f && static_cast<unsigned char>(magic[1]) == 0x8b)
    return std::make_unique<GzipSource>(std::move(in), std::move(head), name);
  return std::make_unique<PlainSource>(std::move(in), std::move(head));
}

}  // namespace

std::string trace_display_name(const std::string& path) { return path == "-" ? "standard input" : path; }

std::unique_ptr<ByteSource> open_trace_bytes(const std::string& path) {
  if (path == "-") return make_source(std::make_unique<FileInput>(stdin, trace_display_name(path), false), "standard input");
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw UsageError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  return make_source(std::make_unique<FileInput>(f, path, true), path);
}

std::unique_ptr<ByteSource> memory_trace_bytes(std::string name, const char* data, std::size_t size) {
  return make_source(std::make_unique<MemoryInput>(data, size), name);
}

}  // namespace attnprof::trace
