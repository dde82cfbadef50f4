#pragma once
// CUDA events in begin/end pairs for timing work on a stream: created together, destroyed on every
// path (an exception between record and read included), read as milliseconds per pair.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "cuda/check.h"

namespace attnprof::cuda {

class EventPairs {
 public:
  explicit EventPairs(std::size_t pairs) : events_(2 * pairs, nullptr) {
    for (auto& e : events_) ATTNPROF_CUDA_CHECK(cudaEventCreate(&e));
  }
  ~EventPairs() {
    for (auto e : events_)
      if (e) cudaEventDestroy(e);
  }
  EventPairs(const EventPairs&) = delete;
  EventPairs& operator=(const EventPairs&) = delete;

  void record_begin(std::size_t pair, cudaStream_t stream) { ATTNPROF_CUDA_CHECK(cudaEventRecord(events_[2 * pair], stream)); }
  void record_end(std::size_t pair, cudaStream_t stream) { ATTNPROF_CUDA_CHECK(cudaEventRecord(events_[2 * pair + 1], stream)); }
  void wait_end(std::size_t pair) const { ATTNPROF_CUDA_CHECK(cudaEventSynchronize(events_[2 * pair + 1])); }
  // Both events of the pair must have completed (wait_end, or synchronise the stream first).
  double elapsed_ms(std::size_t pair) const {
    float ms = 0.0f;
    ATTNPROF_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[2 * pair], events_[2 * pair + 1]));
    return ms;
  }

 private:
  std::vector<cudaEvent_t> events_;
};

}  // namespace attnprof::cuda
