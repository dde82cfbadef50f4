#pragma once
// Occupancy estimated from a kernel's footprint (threads per block, registers per thread, shared
// memory) and the device's limits — the same arithmetic as the CUDA occupancy calculator — for
// every launch API (Kineto reports 0 for cuLaunchKernelEx). An estimate of the theoretical
// occupancy, not a measurement: it names the resource that limits blocks per SM.
#include <attnprof/trace.h>

#include <cstdint>
#include <string>

namespace attnprof::cuda {

struct OccupancyEstimate {
  std::int64_t blocks_per_sm = 0;
  std::int64_t warps_per_sm = 0;
  double occupancy_pct = 0.0;    // active warps / max warps per SM
  std::string limiter;           // "registers", "shared memory", "warps", "blocks per SM", "grid"
  std::string explanation;       // "255 regs × 128 threads = 32768 of 65536 registers → 2 blocks/SM"
  // Blocks per SM the grid can actually fill on this device (grid smaller than the machine).
  double grid_blocks_per_sm = 0.0;
};

struct Footprint {
  std::int64_t threads_per_block = 0;
  std::int64_t registers_per_thread = 0;
  std::int64_t shared_bytes_per_block = 0;  // static + dynamic
  std::int64_t grid_blocks = 0;
};

// Uses compute_major/minor for the allocation granularities and max blocks per SM when the
// properties leave them 0. Throws Error when the footprint cannot fit one block at all.
OccupancyEstimate estimate_occupancy(const Footprint& footprint, const trace::DeviceProperties& device);

}  // namespace attnprof::cuda
