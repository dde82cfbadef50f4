#include "cuda/occupancy.h"

#include <attnprof/error.h>

#include <fmt/format.h>

#include <algorithm>

namespace attnprof::cuda {
namespace {

std::int64_t round_up(std::int64_t value, std::int64_t granule) { return (value + granule - 1) / granule * granule; }

struct Granularity {
  std::int64_t register_unit = 256;      // registers are allocated per warp in units of 256
  std::int64_t shared_unit = 128;        // bytes
  std::int64_t reserved_shared = 1024;   // per block, by the system, on sm_80 and later
  std::int64_t max_blocks_per_sm = 32;
};

Granularity granularity_for(const trace::DeviceProperties& d) {
  Granularity g;
  if (d.compute_major < 8) g.reserved_shared = 0;
  if (d.compute_major == 8 && d.compute_minor == 6) g.max_blocks_per_sm = 16;
  if (d.compute_major == 8 && d.compute_minor == 9) g.max_blocks_per_sm = 24;
  if (d.compute_major == 7 && d.compute_minor == 5) g.max_blocks_per_sm = 16;
  if (d.max_blocks_per_sm > 0) g.max_blocks_per_sm = d.max_blocks_per_sm;
  return g;
}

}  // namespace

OccupancyEstimate estimate_occupancy(const Footprint& f, const trace::DeviceProperties& d) {
  if (f.threads_per_block <= 0 || d.max_threads_per_sm <= 0 || d.regs_per_sm <= 0 || d.warp_size <= 0)
    throw Error("occupancy estimate: the footprint or the device properties are incomplete");
  const Granularity g = granularity_for(d);
  const std::int64_t warps_per_block = (f.threads_per_block + d.warp_size - 1) / d.warp_size;
  const std::int64_t max_warps = d.max_threads_per_sm / d.warp_size;

  const std::int64_t by_warps = max_warps / warps_per_block;
  const std::int64_t regs_per_warp = round_up(std::max<std::int64_t>(f.registers_per_thread, 1) * d.warp_size, g.register_unit);
  const std::int64_t by_registers = f.registers_per_thread <= 0 ? g.max_blocks_per_sm
                                                                : d.regs_per_sm / (regs_per_warp * warps_per_block);
  const std::int64_t shared_per_block = round_up(std::max<std::int64_t>(f.shared_bytes_per_block, 0) + g.reserved_shared,
                                                 g.shared_unit);
  const std::int64_t shared_per_sm = d.shared_per_sm > 0 ? d.shared_per_sm : 0;
  const std::int64_t by_shared = f.shared_bytes_per_block <= 0 || shared_per_sm == 0
                                     ? g.max_blocks_per_sm
                                     : shared_per_sm / shared_per_block;

  OccupancyEstimate e;
  e.blocks_per_sm = g.max_blocks_per_sm;
  e.limiter = "blocks per SM";
  auto consider = [&](std::int64_t blocks, const char* name) {
    if (blocks < e.blocks_per_sm) {
      e.blocks_per_sm = blocks;
      e.limiter = name;
    }
  };
  consider(by_warps, "warps");
  consider(by_registers, "registers");
  consider(by_shared, "shared memory");
  if (e.blocks_per_sm <= 0)
    throw Error(fmt::format("occupancy estimate: a block of {} threads, {} registers/thread and {} B shared memory "
                            "does not fit one SM", f.threads_per_block, f.registers_per_thread, f.shared_bytes_per_block));
  e.warps_per_sm = e.blocks_per_sm * warps_per_block;
  e.occupancy_pct = 100.0 * static_cast<double>(e.warps_per_sm) / static_cast<double>(max_warps);
  if (d.num_sms > 0 && f.grid_blocks > 0) e.grid_blocks_per_sm = static_cast<double>(f.grid_blocks) / d.num_sms;

  if (e.limiter == "registers") {
    e.explanation = fmt::format("{} regs × {} threads = {} of {} registers per SM → {} blocks/SM",
                                f.registers_per_thread, f.threads_per_block, regs_per_warp * warps_per_block,
                                d.regs_per_sm, e.blocks_per_sm);
  } else if (e.limiter == "shared memory") {
    e.explanation = fmt::format("{} B shared memory per block (+{} reserved) of {} per SM → {} blocks/SM",
                                f.shared_bytes_per_block, g.reserved_shared, shared_per_sm, e.blocks_per_sm);
  } else if (e.limiter == "warps") {
    e.explanation = fmt::format("{} warps per block of {} per SM → {} blocks/SM", warps_per_block, max_warps,
                                e.blocks_per_sm);
  } else {
    e.explanation = fmt::format("at most {} blocks per SM", g.max_blocks_per_sm);
  }
  // A grid too small to give every SM that many blocks cannot reach the estimate.
  if (e.grid_blocks_per_sm > 0.0 && e.grid_blocks_per_sm < static_cast<double>(e.blocks_per_sm)) {
    e.limiter = "grid";
    e.explanation += fmt::format("; but the grid has only {:.2f} blocks per SM", e.grid_blocks_per_sm);
    double active_blocks = std::max(e.grid_blocks_per_sm, 0.0);
    e.occupancy_pct = 100.0 * active_blocks * static_cast<double>(warps_per_block) / static_cast<double>(max_warps);
  }
  return e;
}

}  // namespace attnprof::cuda
