#pragma once
// The CUPTI API behind a narrow interface (Kineto's CuptiActivityApi idea): the real one enables
// activity kinds and launch callbacks and parses CUPTI's buffers into ActivityBatch; tests use a
// fake that hands over fabricated records.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "cuda/activity_records.h"

namespace attnprof::cuda {

class CuptiApi {
 public:
  virtual ~CuptiApi() = default;
  // Starts collecting. nullopt on success; otherwise why CUPTI cannot be used (no device, or it is
  // taken by another tool such as Nsight or compute-sanitizer), one line.
  virtual std::optional<std::string> start() = 0;
  // Flushes every buffer (call after the device is idle) and stops collecting.
  virtual void stop() = 0;
  // The records gathered between start() and stop(), moved out.
  virtual ActivityBatch take() = 0;
  // CUPTI's clock, for ClockMap.
  virtual std::int64_t timestamp_ns() = 0;
};

struct RealCuptiOptions {
  // Test hook: hand CUPTI no buffers, so it drops every record and counts them.
  bool starve_buffers = false;
};
std::unique_ptr<CuptiApi> make_real_cupti_api(RealCuptiOptions options = {});

}  // namespace attnprof::cuda
