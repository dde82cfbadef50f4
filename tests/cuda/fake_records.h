#pragma once
// Fabricated CUPTI activity for the logic tests: one launch -> one kernel, with a chosen correlation.
#include <attnprof/trace.h>

#include <string>

#include "cuda/activity_records.h"
#include "common/h200.h"

namespace attnprof::cuda::fakes {

inline KernelRecord kernel(std::uint32_t correlation, std::int64_t start, std::int64_t end, std::string name = "k") {
  KernelRecord k;
  k.name = std::move(name);
  k.start_ns = start;
  k.end_ns = end;
  k.correlation = correlation;
  k.device = 0;
  k.context = 1;
  k.stream = 7;
  k.grid = {132, 1, 1};
  k.block = {128, 1, 1};
  k.registers_per_thread = 64;
  k.static_shared_bytes = 0;
  k.dynamic_shared_bytes = 0;
  return k;
}

inline ApiRecord launch(std::uint32_t correlation, std::int64_t start, std::int64_t end,
                        std::string name = "cudaLaunchKernel", bool driver = false) {
  ApiRecord a;
  a.driver = driver;
  a.name = std::move(name);
  a.cbid = driver ? 652 : 211;
  a.start_ns = start;
  a.end_ns = end;
  a.correlation = correlation;
  a.process = 515;
  a.thread = 515;
  return a;
}

// As CUPTI reports it: Kineto's fields plus the limit on resident blocks.
inline trace::DeviceProperties h200() {
  trace::DeviceProperties d = attnprof::testing::h200_kineto_properties();
  d.max_blocks_per_sm = 32;
  return d;
}

}  // namespace attnprof::cuda::fakes
