#pragma once
// The H200's device properties as Kineto writes them into a trace (no max blocks per SM: readers
// derive it from the compute capability). Shared by the CUPTI and the insight tests.
#include <attnprof/trace.h>

namespace attnprof::testing {

inline trace::DeviceProperties h200_kineto_properties() {
  trace::DeviceProperties d;
  d.id = 0;
  d.name = "NVIDIA H200";
  d.compute_major = 9;
  d.compute_minor = 0;
  d.max_threads_per_block = 1024;
  d.max_threads_per_sm = 2048;
  d.regs_per_block = 65536;
  d.regs_per_sm = 65536;
  d.warp_size = 32;
  d.shared_per_block = 49152;
  d.shared_per_block_optin = 232448;
  d.shared_per_sm = 233472;
  d.num_sms = 132;
  return d;
}

}  // namespace attnprof::testing
