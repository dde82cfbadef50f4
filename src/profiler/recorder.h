#pragma once
// Thread-local event buffers behind Range and record_allocation. A recording session runs from
// Profiler::start() to Profiler::stop(); each thread appends to its own buffer without locks, and
// stop() takes every buffer's records. Hazard: stop() must not race with ranges still being
// recorded on other threads (as in torch.profiler, stop once the workload has returned).
#include <attnprof/profiler.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace attnprof::profiler::detail {

struct Record {
  trace::Category category = trace::Category::other;
  char phase = 'X';             // 'X' range, 'i' allocation instant
  std::int64_t ts_ns = 0;
  std::int64_t end_ns = -1;     // -1 while the range is open
  std::int64_t external_id = -1;
  // Text lives in the thread's TextArena (stable addresses until the session's records are dropped).
  const char* name = nullptr;
  const char* dims = nullptr;   // raw JSON of "Input Dims" (dims_size 0: none)
  const char* types = nullptr;  // raw JSON of "Input type"
  std::uint32_t name_size = 0, dims_size = 0, types_size = 0;
  // allocation instants
  std::int64_t bytes = 0;
  std::int64_t total_allocated = 0;
  std::uint64_t address = 0;
  Device device = Device::cpu;
};

// Records in fixed-size chunks: appending never moves (or copies) what was recorded.
class RecordChunks {
 public:
  static constexpr std::size_t kChunk = 4096;
  Record& push() {
    if (size_ == chunks_.size() * kChunk) chunks_.push_back(std::make_unique<Record[]>(kChunk));
    Record& r = chunks_[size_ / kChunk][size_ % kChunk];
    ++size_;
    return r;
  }
  std::size_t size() const { return size_; }
  const Record& operator[](std::size_t i) const { return chunks_[i / kChunk][i % kChunk]; }

 private:
  std::vector<std::unique_ptr<Record[]>> chunks_;
  std::size_t size_ = 0;
};

// Copies of names and shape text, in blocks that never move.
class TextArena {
 public:
  const char* copy(std::string_view text) {
    if (text.size() > left_) {
      std::size_t block = std::max<std::size_t>(kBlock, text.size());
      blocks_.push_back(std::make_unique<char[]>(block));
      next_ = blocks_.back().get();
      left_ = block;
    }
    char* out = next_;
    if (!text.empty()) std::memcpy(out, text.data(), text.size());
    next_ += text.size();
    left_ -= text.size();
    return out;
  }

 private:
  static constexpr std::size_t kBlock = 256 * 1024;
  std::vector<std::unique_ptr<char[]>> blocks_;
  char* next_ = nullptr;
  std::size_t left_ = 0;
};

struct ThreadEvents {
  std::int64_t tid = 0;
  RecordChunks records;
  TextArena text;
};

void begin_session(bool record_shapes, bool profile_memory);
// Turns recording off and hands over every thread's records of this session.
std::vector<ThreadEvents> end_session();
std::int64_t next_external_id();
std::int64_t current_thread_id();
// Kineto's spelling of a dtype in "Input type" (c10::BFloat16, float, ...).
const char* kineto_type_name(DType dtype);

}  // namespace attnprof::profiler::detail
