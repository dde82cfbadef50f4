#pragma once
// What a Kineto trace's "est. achieved occupancy %" means, and what a grid smaller than one wave
// leaves of a theoretical occupancy.
//
// libkineto (DeviceProperties.cpp, kernelOccupancy) computes the figure as
//   min(blocks the CUDA occupancy calculator fits on an SM, grid CTAs / SMs) × threads per block
//   / max threads per SM, written as (int)(0.5 + 100 × that).
// It calls the calculator with the function's maxDynamicSharedSizeBytes = 0 and the default
// shared-memory limit, so a block of more than deviceProperties.sharedMemPerBlock (48 KiB) fits
// zero times and the figure is 0; and a grid of a few CTAs on a GPU of 132 SMs gives a figure
// under 0.5% that is written as 0. Neither 0 is a measurement, and neither depends on the launch
// API.
#include <attnprof/trace.h>

#include <cstdint>
#include <optional>
#include <string>

#include "report/occupancy.h"

namespace attnprof::report {

// Why the trace records 0% for this launch.
enum class ZeroCause {
  none,                // it records something else, or the footprint names no cause
  shared_over_default, // a block over deviceProperties.sharedMemPerBlock: the calculator fits none
  grid_rounds_down,    // min(blocks per SM, CTAs / SMs) × threads / max threads per SM < 0.5%
};
struct RecordedZero {
  ZeroCause cause = ZeroCause::none;
  double kineto_percent = 0;  // Kineto's figure before rounding (grid_rounds_down)
  // "no block of 164,308 B fits the 49,152 B Kineto's calculator assumes without opt-in" or
  // "8 CTAs / 132 SMs × 128 threads / 2,048 = 0.38%"
  std::string text;
};
RecordedZero recorded_zero(const trace::DeviceProperties& device, const trace::KernelLaunch& launch,
                           const Occupancy& occ);

// The share of the GPU's warp slots a grid of `ctas` can fill at `occ`, when it is less than one
// wave (ctas < SMs × blocks per SM): occ.percent × ctas / (SMs × blocks per SM). nullopt when the
// grid fills a wave or the device's SM count is unknown.
struct GridCap {
  std::int64_t ctas = 0;
  std::int64_t slots = 0;  // SMs × blocks per SM
  double percent = 0;
  // "its grid of 32 CTAs is under one wave (132 SMs × 1 block = 132 slots): 32/132 of 18.75% = 4.55% of the
  // GPU's warps at most"
  std::string text;
};
std::optional<GridCap> grid_cap(const trace::DeviceProperties& device, std::int64_t ctas, const Occupancy& occ);

// The CTAs of a launch: grid x·y·z (0 when the trace does not say).
std::int64_t grid_ctas(const trace::KernelLaunch& launch);

}  // namespace attnprof::report
